// A real node for the test cluster: kubelet with containerd 2 and Debian's runc, a bridge Pod
// network from Debian's CNI plugins, kube-scheduler, kube-proxy, and a local registry (Debian's
// docker-registry) that the node pulls from over plain HTTP. It registers to KubeTestCluster,
// whose second kube-controller-manager runs the node-lifecycle controller.
//
// The whole cluster lives in the network and mount namespaces this test binary made for itself
// (EnterOwnNamespaces, first thing in main): the node's address, the Pod bridge, kubelet's
// iptables rules and every mount containerd makes are gone with the process. Started once per
// test binary (one at a time: ctest's resource lock `realnode`), which first clears what a
// killed one left; tests that need it carry the ctest label `realnode`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "kube/kube_api.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {

class KubeTestCluster;

struct PushedImage {
  std::string reference;  // REGISTRY/berth/runner-test:TAG
  std::string digest;     // sha256:... of its manifest
};

// Unshares this process's network and mount namespaces (all mounts private), brings up
// loopback and the node's address on a link of its own (a bridge: this kernel has no dummy
// links). Call from main before any thread starts.
Result<void> EnterOwnNamespaces();

class RealNode {
 public:
  static constexpr const char* kName = "berth-node";
  static constexpr const char* kIp = "192.0.2.2";  // TEST-NET-1, only in this netns
  // The Pod bridge's own address: what Pods reach this process's servers on.
  static constexpr const char* kPodGateway = "10.244.0.1";

  // Starts the node (and the cluster) on first call; later calls return the same one.
  static Result<RealNode*> Shared();

  // host:port of the registry.
  const std::string& Registry() const { return registry_; }
  // Copies tag of an OCI layout into the registry as repository:as_tag (replacing what that
  // tag named); returns the image reference Pods use.
  Result<std::string> Push(const std::filesystem::path& layout, const std::string& tag,
                           const std::string& repository, const std::string& as_tag) const;
  // scripts/images' berth/runner with the folder layer added at /berth, pushed as
  // berth/runner-test:tag.
  Result<PushedImage> PushRunnerWith(const std::filesystem::path& layer,
                                     const std::string& tag) const;
  // Where kubelet keeps a Pod's emptyDir volume on this node.
  std::filesystem::path EmptyDirOf(const std::string& pod_uid, const std::string& volume) const;
  // A namespace with its `default` ServiceAccount and `kube-root-ca.crt` (this cluster runs no
  // controller that makes them).
  Result<void> PrepareNamespace(kube::KubeApi& admin, const std::string& ns) const;

  ~RealNode();
  RealNode(const RealNode&) = delete;
  RealNode& operator=(const RealNode&) = delete;

 private:
  RealNode(sys::TempDir dir, KubeTestCluster* cluster) : dir_(std::move(dir)), cluster_(cluster) {}
  static Result<std::unique_ptr<RealNode>> Start();
  Result<void> StartRegistry();
  Result<void> StartContainerd();
  Result<void> StartKubelet();
  Result<void> StartScheduler();
  Result<void> StartProxy();
  Result<void> PushPauseImage();
  Result<void> WaitUntilNodeReady();
  void StopContainers();

  sys::TempDir dir_;
  KubeTestCluster* cluster_;  // the shared one it registers to
  std::string registry_;
  std::string pause_image_;
  std::unique_ptr<sys::Subprocess> registry_process_;
  std::unique_ptr<sys::Subprocess> containerd_;
  std::unique_ptr<sys::Subprocess> kubelet_;
  std::unique_ptr<sys::Subprocess> scheduler_;
  std::unique_ptr<sys::Subprocess> node_lifecycle_;
  std::unique_ptr<sys::Subprocess> proxy_;
};

}  // namespace berth::testenv
