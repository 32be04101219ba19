// Starting etcd and kube-apiserver with the flags controller-runtime's envtest uses, and
// kube-controller-manager with only the controllers berth's tests need.
#include "kube_test_cluster.h"

#include <fmt/format.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/base64.h"
#include "kube/kube_config.h"
#include "loopback.h"
#include "test_tools.h"

namespace berth::testenv {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(120);

Result<void> Write(const std::filesystem::path& path, const std::string& content) {
  return sys::WriteFileAtomic(path, content);
}

std::string& AdvertisedAddress() {
  static std::string address;
  return address;
}

std::optional<JwtIssuer>& TrustedIssuer() {
  static std::optional<JwtIssuer> issuer;
  return issuer;
}

// The AuthenticationConfiguration that trusts it.
std::string AuthenticationConfig(const JwtIssuer& issuer) {
  std::string ca = "        " + issuer.ca_pem;
  for (size_t at = ca.find('\n'); at != std::string::npos && at + 1 < ca.size();
       at = ca.find('\n', at + 1))
    ca.insert(at + 1, "        ");
  return fmt::format(
      "apiVersion: apiserver.config.k8s.io/v1\n"
      "kind: AuthenticationConfiguration\n"
      "jwt:\n"
      "  - issuer:\n"
      "      url: {}\n"
      "      audiences: [{}]\n"
      "      certificateAuthority: |\n{}\n"
      "    claimMappings:\n"
      "      username:\n"
      "        claim: sub\n"
      "        prefix: \"{}\"\n",
      issuer.url, issuer.audience, ca, issuer.username_prefix);
}

}  // namespace

void AdvertiseApiserverOn(const std::string& address) { AdvertisedAddress() = address; }
void TrustJwtIssuer(const JwtIssuer& issuer) { TrustedIssuer() = issuer; }

Result<KubeTestCluster*> KubeTestCluster::Shared() {
  static Result<std::unique_ptr<KubeTestCluster>> cluster = Start();
  if (!cluster) return cluster.error();
  return cluster->get();
}

Result<std::unique_ptr<KubeTestCluster>> KubeTestCluster::Start() {
  auto dir = sys::TempDir::Create("berth-kube");
  if (!dir) return dir.error();
  auto ca = crypto::CreateCertificateAuthority("berth-test-ca", std::chrono::hours(24));
  if (!ca) return ca.error();
  std::unique_ptr<KubeTestCluster> cluster(new KubeTestCluster(std::move(*dir), std::move(*ca)));
  if (auto r = cluster->StartEtcd(); !r) return r.error();
  if (auto r = cluster->StartApiserver(); !r) return r.error();
  if (auto r = cluster->StartControllerManager(); !r) return r.error();
  return cluster;
}

Result<KubeTestCluster*> KubeTestCluster::SharedSecond() {
  static Result<std::unique_ptr<KubeTestCluster>> cluster = StartSecond();
  if (!cluster) return cluster.error();
  return cluster->get();
}

Result<std::unique_ptr<KubeTestCluster>> KubeTestCluster::StartSecond() {
  auto first = Shared();  // its etcd; made first, so that it is torn down after this one
  if (!first) return first.error();
  auto dir = sys::TempDir::Create("berth-kube-second");
  if (!dir) return dir.error();
  auto ca = crypto::CreateCertificateAuthority("berth-test-second-ca", std::chrono::hours(24));
  if (!ca) return ca.error();
  std::unique_ptr<KubeTestCluster> cluster(new KubeTestCluster(std::move(*dir), std::move(*ca)));
  cluster->etcd_url_ = (*first)->etcd_url_;
  cluster->etcd_prefix_ = "/second-cluster";
  if (auto r = cluster->StartApiserver(); !r) return r.error();
  return cluster;
}

KubeTestCluster::~KubeTestCluster() {
  // Its clients first, then the apiserver, so that none logs a disappearance as an error.
  controller_manager_.reset();
  apiserver_.reset();
  etcd_.reset();
}

Result<void> KubeTestCluster::StartEtcd() {
  auto etcd = TestTool("BERTH_TEST_ETCD");
  if (!etcd) return etcd.error();
  auto client_port = FreeLoopbackPort();
  auto peer_port = FreeLoopbackPort();
  if (!client_port || !peer_port) return MakeError(ErrorKind::kInternal, "no free port for etcd");
  etcd_url_ = fmt::format("http://127.0.0.1:{}", *client_port);
  std::string peer_url = fmt::format("http://127.0.0.1:{}", *peer_port);
  sys::SpawnOptions options;
  options.argv = {etcd->string(),
                  "--data-dir=" + (dir_.Path() / "etcd").string(),
                  "--listen-client-urls=" + etcd_url_,
                  "--advertise-client-urls=" + etcd_url_,
                  "--listen-peer-urls=" + peer_url,
                  "--initial-advertise-peer-urls=" + peer_url,
                  "--initial-cluster=default=" + peer_url,
                  "--unsafe-no-fsync=true"};
  options.output_path = (dir_.Path() / "etcd.log").string();
  auto process = sys::Subprocess::Spawn(options);
  if (!process) return process.error();
  etcd_ = std::make_unique<sys::Subprocess>(std::move(*process));
  auto http = net::MakeCurlHttpClient();
  return WaitUntilReady(
      "etcd", *etcd_,
      [&] {
        auto r = http->Send({.url = etcd_url_ + "/health", .timeout = std::chrono::seconds(2)});
        return r && r->status == 200 && r->body.find("\"true\"") != std::string::npos;
      },
      kStartTimeout, options.output_path);
}

Result<void> KubeTestCluster::StartApiserver() {
  auto apiserver = TestTool("BERTH_TEST_KUBE_APISERVER");
  if (!apiserver) return apiserver.error();
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  url_ = fmt::format("https://127.0.0.1:{}", *port);
  const auto& dir = dir_.Path();

  crypto::CertificateRequest serving;
  serving.common_name = "kube-apiserver";
  serving.use = crypto::CertificateUse::kServer;
  serving.dns_names = {"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"};
  serving.ip_addresses = {"127.0.0.1", "10.0.0.1"};
  const std::string& advertised = AdvertisedAddress();
  if (!advertised.empty()) serving.ip_addresses.push_back(advertised);
  auto serving_cert = crypto::IssueCertificate(serving, ca_);
  if (!serving_cert) return serving_cert.error();
  crypto::CertificateRequest admin;
  admin.common_name = "berth-test-admin";
  admin.organizations = {"system:masters"};
  auto admin_cert = crypto::IssueCertificate(admin, ca_);
  if (!admin_cert) return admin_cert.error();
  admin_ = std::move(*admin_cert);
  // For what the apiserver asks a real node's kubelet (logs, exec): tests/env/real_node.h.
  crypto::CertificateRequest kubelet_client;
  kubelet_client.common_name = "kube-apiserver-kubelet-client";
  kubelet_client.organizations = {"system:masters"};
  auto kubelet_client_cert = crypto::IssueCertificate(kubelet_client, ca_);
  if (!kubelet_client_cert) return kubelet_client_cert.error();
  auto sa_key = crypto::PrivateKey::GenerateEcP256();
  if (!sa_key) return sa_key.error();
  auto sa_public = sa_key->PublicKeyPem();
  if (!sa_public) return sa_public.error();

  for (const auto& [name, content] : {std::pair{"ca.crt", ca_.certificate_pem},
                                      {"apiserver.crt", serving_cert->certificate_pem},
                                      {"apiserver.key", serving_cert->key.pem},
                                      {"sa.key", sa_key->pem},
                                      {"sa.pub", *sa_public},
                                      {"kubelet-client.crt", kubelet_client_cert->certificate_pem},
                                      {"kubelet-client.key", kubelet_client_cert->key.pem}}) {
    if (auto r = Write(dir / name, content); !r) return r.error();
  }

  admin_kubeconfig_ = dir / "admin.kubeconfig";
  std::string kubeconfig = KubeconfigYaml(AdminTls());
  if (auto r = Write(admin_kubeconfig_, kubeconfig); !r) return r.error();

  sys::SpawnOptions options;
  options.argv = {
      apiserver->string(), "--etcd-servers=" + etcd_url_, "--cert-dir=" + (dir / "certs").string(),
      "--tls-cert-file=" + (dir / "apiserver.crt").string(),
      "--tls-private-key-file=" + (dir / "apiserver.key").string(),
      "--client-ca-file=" + (dir / "ca.crt").string(), fmt::format("--secure-port={}", *port),
      "--bind-address=" + std::string(advertised.empty() ? "127.0.0.1" : "0.0.0.0"),
      "--advertise-address=" + (advertised.empty() ? std::string("127.0.0.1") : advertised),
      "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
      // Node: a real node's kubelet may touch only its node and its Pods.
      "--authorization-mode=Node,RBAC", "--service-account-issuer=" + url_ + "/",
      "--kubelet-client-certificate=" + (dir / "kubelet-client.crt").string(),
      "--kubelet-client-key=" + (dir / "kubelet-client.key").string(),
      "--kubelet-preferred-address-types=InternalIP",
      "--service-account-key-file=" + (dir / "sa.pub").string(),
      "--service-account-signing-key-file=" + (dir / "sa.key").string(),
      "--disable-admission-plugins=DefaultStorageClass,StorageObjectInUseProtection",
      // ConfigMaps bypass the watch cache, so that a test can expire a watch by
      // compacting etcd (the cache would serve an old version from memory).
      "--watch-cache-sizes=configmaps#0"};
  if (!etcd_prefix_.empty()) options.argv.push_back("--etcd-prefix=" + etcd_prefix_);
  if (const auto& issuer = TrustedIssuer()) {
    const std::filesystem::path file = dir / "authentication.yaml";
    if (auto r = Write(file, AuthenticationConfig(*issuer)); !r) return r.error();
    options.argv.push_back("--authentication-config=" + file.string());
  }
  options.output_path = (dir / "kube-apiserver.log").string();
  apiserver_options_ = std::move(options);
  return RunApiserver();
}

Result<void> KubeTestCluster::RunApiserver() {
  auto process = sys::Subprocess::Spawn(apiserver_options_);
  if (!process) return process.error();
  apiserver_ = std::make_unique<sys::Subprocess>(std::move(*process));
  auto http = net::MakeCurlHttpClient(AdminTls());
  return WaitUntilReady(
      "kube-apiserver", *apiserver_,
      [&] {
        auto r = http->Send({.url = url_ + "/readyz", .timeout = std::chrono::seconds(5)});
        return r && r->status == 200;
      },
      kStartTimeout, apiserver_options_.output_path);
}

void KubeTestCluster::StopApiserver() {
  if (!apiserver_) return;
  apiserver_->Signal(SIGTERM);
  apiserver_->Wait();
  apiserver_.reset();
}

Result<void> KubeTestCluster::StartApiserverAgain() {
  if (apiserver_) return {};
  return RunApiserver();
}

net::TlsConfig KubeTestCluster::AdminTls() const {
  return {.ca_pem = ca_.certificate_pem,
          .client_cert_pem = admin_.certificate_pem,
          .client_key_pem = admin_.key.pem};
}

Result<void> KubeTestCluster::StartControllerManager() {
  // Jobs run their Pods, owned objects go with their owner, finished Jobs expire. Nothing else:
  // tests that write a quota's status or a ServiceAccount themselves stay in charge of them.
  auto process = StartControllers(
      "job-controller,garbage-collector-controller,ttl-after-finished-controller", dir_.Path());
  if (!process) return process.error();
  controller_manager_ = std::move(*process);
  return {};
}

Result<std::unique_ptr<sys::Subprocess>> KubeTestCluster::StartControllers(
    const std::string& controllers, const std::filesystem::path& dir) const {
  auto binary = TestTool("BERTH_TEST_KUBE_CONTROLLER_MANAGER");
  if (!binary) return binary.error();
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  std::string name = "kube-controller-manager-" + controllers.substr(0, controllers.find(','));
  return StartServing(name,
                      {.argv = {binary->string(), "--kubeconfig=" + admin_kubeconfig_.string(),
                                "--controllers=" + controllers, "--leader-elect=false",
                                "--bind-address=127.0.0.1", fmt::format("--secure-port={}", *port),
                                "--cert-dir=" + (dir / (name + "-certs")).string()},
                       .output_path = (dir / (name + ".log")).string()},
                      fmt::format("https://127.0.0.1:{}/healthz", *port), kStartTimeout);
}

Result<std::unique_ptr<kube::KubeClient>> KubeTestCluster::AdminClient() const {
  auto config = kube::KubeConfig::Parse(KubeconfigYaml(AdminTls()), "/", {});
  if (!config) return config.error();
  return kube::MakeKubeClient(std::move(*config));
}

Result<std::unique_ptr<kube::KubeClient>> KubeTestCluster::SharedAdminWith(
    const std::vector<std::string>& namespaces) {
  auto cluster = Shared();
  if (!cluster) return cluster.error();
  for (const std::string& name : namespaces) {
    if (auto made = (*cluster)->CreateNamespace(name); !made) return made.error();
  }
  return (*cluster)->AdminClient();
}

std::string KubeTestCluster::KubeconfigYaml(const net::TlsConfig& tls,
                                            const std::string& token) const {
  std::string user =
      token.empty()
          ? fmt::format("    client-certificate-data: {}\n    client-key-data: {}\n",
                        Base64Encode(tls.client_cert_pem), Base64Encode(tls.client_key_pem))
          : fmt::format("    token: {}\n", token);
  return fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n"
      "    certificate-authority-data: {}\nusers:\n- name: user\n  user:\n{}"
      "contexts:\n- name: test\n  context:\n    cluster: test\n    user: user\n"
      "    namespace: default\ncurrent-context: test\n",
      url_, Base64Encode(ca_.certificate_pem), user);
}

Result<void> KubeTestCluster::CreateNamespace(const std::string& name) const {
  auto http = net::MakeCurlHttpClient(AdminTls());
  auto create = [&](const std::string& path, const std::string& kind) -> Result<void> {
    net::HttpRequest request{.method = "POST", .url = url_ + path};
    request.headers = {{"Content-Type", "application/json"}};
    request.body = fmt::format(R"({{"apiVersion":"v1","kind":"{}","metadata":{{"name":"{}"}}}})",
                               kind, kind == "Namespace" ? name : "default");
    auto response = http->Send(request);
    if (!response) return response.error();
    if (response->status != 201 && response->status != 409)
      return MakeError(ErrorKind::kInternal, "cannot create " + kind + ": " + response->body);
    return {};
  };
  if (auto r = create("/api/v1/namespaces", "Namespace"); !r) return r;
  return create("/api/v1/namespaces/" + name + "/serviceaccounts", "ServiceAccount");
}

Result<void> KubeTestCluster::CompactEtcd() const {
  // etcd's v3 JSON gateway: read the current revision, then compact to it.
  auto http = net::MakeCurlHttpClient();
  auto post = [&](const std::string& path, const std::string& body) {
    return http->Send({.method = "POST", .url = etcd_url_ + path, .body = body});
  };
  auto range = post("/v3/kv/range", R"({"key":"Lw=="})");
  if (!range || range->status != 200)
    return MakeError(ErrorKind::kInternal, "cannot read etcd's revision");
  auto revision = nlohmann::json::parse(range->body)["header"]["revision"];
  auto compacted = post("/v3/kv/compaction", fmt::format(R"({{"revision":{},"physical":true}})",
                                                         revision.get<std::string>()));
  if (!compacted || compacted->status != 200)
    return MakeError(ErrorKind::kInternal, "etcd refused the compaction");
  return {};
}

Result<net::TlsConfig> KubeTestCluster::UserTls(const std::string& user,
                                                const std::vector<std::string>& groups) const {
  crypto::CertificateRequest request;
  request.common_name = user;
  request.organizations = groups;
  auto cert = crypto::IssueCertificate(request, ca_);
  if (!cert) return cert.error();
  return net::TlsConfig{.ca_pem = ca_.certificate_pem,
                        .client_cert_pem = cert->certificate_pem,
                        .client_key_pem = cert->key.pem};
}

}  // namespace berth::testenv
