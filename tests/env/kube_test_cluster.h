// A real etcd and kube-apiserver on loopback ports, with client-certificate authentication and
// RBAC on, and kube-controller-manager running the job, garbage-collector and
// ttl-after-finished controllers; started once per test binary and torn down at its exit. There
// is no kubelet: Pods stay Pending unless the test node agent runs them.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "crypto/x509.h"
#include "kube/kube_api.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {

// In a test binary with a network namespace of its own (real_node.h), before the cluster
// starts: the apiserver then serves on every address of that namespace and advertises this one,
// which Pods reach through the `kubernetes` Service.
void AdvertiseApiserverOn(const std::string& address);

// An OpenID Connect issuer whose ID tokens the apiserver takes as users (a structured
// AuthenticationConfiguration, as a cluster that trusts berthd has): discovery over TLS against
// ca_pem, the audience checked, the user named prefix + sub. Before the cluster starts (its
// server may answer later: the apiserver fetches discovery in the background until it does).
struct JwtIssuer {
  std::string url;
  std::string audience;
  std::string ca_pem;
  std::string username_prefix;
};
void TrustJwtIssuer(const JwtIssuer& issuer);

class KubeTestCluster {
 public:
  // Starts the cluster on first call; later calls return the same one. A start failure is
  // returned to every caller (each test then fails with the reason).
  static Result<KubeTestCluster*> Shared();
  // Another cluster beside the shared one, for runners that name a cluster of their own: its own
  // CA, apiserver and admin, its objects under another prefix of the shared etcd (so neither
  // cluster sees the other's), no controller manager. Started on first call, as Shared.
  static Result<KubeTestCluster*> SharedSecond();

  // https://127.0.0.1:PORT
  const std::string& Url() const { return url_; }
  const std::string& CaPem() const { return ca_.certificate_pem; }
  // TLS for a client in group system:masters.
  net::TlsConfig AdminTls() const;
  // A kubeconfig file for that admin (for tools and the launcher under test).
  const std::filesystem::path& AdminKubeconfig() const { return admin_kubeconfig_; }
  // A kubeconfig document for this cluster with a client certificate (tls) or a bearer token.
  std::string KubeconfigYaml(const net::TlsConfig& tls, const std::string& token = "") const;
  // A client with the cluster admin's rights.
  Result<std::unique_ptr<kube::KubeClient>> AdminClient() const;
  // The shared cluster's admin client, with these namespaces made: what a suite of tests on one
  // cluster starts from.
  static Result<std::unique_ptr<kube::KubeClient>> SharedAdminWith(
      const std::vector<std::string>& namespaces);
  // A namespace with its `default` ServiceAccount (no controller manager makes it here);
  // succeeds when both exist already.
  Result<void> CreateNamespace(const std::string& name) const;
  // Compacts etcd's history up to now, as the apiserver does every few minutes: a watch from an
  // older resourceVersion is then answered 410 Expired. ConfigMaps show it: their watches go to
  // etcd (other kinds are served from the apiserver's watch cache).
  Result<void> CompactEtcd() const;
  // A client certificate for any user and groups, signed by the cluster's client CA.
  Result<net::TlsConfig> UserTls(const std::string& user,
                                 const std::vector<std::string>& groups) const;

  // The apiserver goes away (SIGTERM: every connection and watch ends, nothing answers on its
  // port) and comes back on the same port with the same etcd, as in an upgrade or a restart.
  void StopApiserver();
  Result<void> StartApiserverAgain();

  // Another kube-controller-manager with only these controllers (comma-separated), its files in
  // dir: for a real node, the node-lifecycle controller that lifts the not-ready taint.
  Result<std::unique_ptr<sys::Subprocess>> StartControllers(const std::string& controllers,
                                                            const std::filesystem::path& dir) const;

  ~KubeTestCluster();
  KubeTestCluster(const KubeTestCluster&) = delete;
  KubeTestCluster& operator=(const KubeTestCluster&) = delete;

 private:
  KubeTestCluster(sys::TempDir dir, crypto::IssuedCertificate ca)
      : dir_(std::move(dir)), ca_(std::move(ca)) {}
  static Result<std::unique_ptr<KubeTestCluster>> Start();
  static Result<std::unique_ptr<KubeTestCluster>> StartSecond();
  Result<void> StartEtcd();
  Result<void> StartApiserver();
  Result<void> RunApiserver();  // with apiserver_options_, until it is ready
  Result<void> StartControllerManager();

  sys::TempDir dir_;
  crypto::IssuedCertificate ca_;
  crypto::IssuedCertificate admin_;
  std::filesystem::path admin_kubeconfig_;
  std::string etcd_url_;
  std::string etcd_prefix_;  // empty: the apiserver's default (/registry)
  std::string url_;
  std::unique_ptr<sys::Subprocess> etcd_;
  sys::SpawnOptions apiserver_options_;
  std::unique_ptr<sys::Subprocess> apiserver_;
  std::unique_ptr<sys::Subprocess> controller_manager_;
};

}  // namespace berth::testenv
