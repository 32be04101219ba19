// A namespace ready for the Kubernetes launcher, for its tests and its benchmark: Pod Security
// `restricted` enforced, deploy/kubernetes/launcher-rbac.yaml bound to a service account whose
// token the launcher's client carries, and a runner image with examples under /berth/modules.
// On the test node agent (fast tests) that image is a folder (the runner at /runner, tofu on
// PATH, hello and slow); on the real node (tests/env/real_node.h) it is scripts/images'
// berth/runner with a layer holding hello, pulled by containerd from the test registry.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/kube_api.h"
#include "kube_test_cluster.h"
#include "launch/kubernetes/settings.h"
#include "launch/launcher.h"
#include "real_node.h"
#include "sys/files.h"
#include "test_node_agent.h"

namespace berth::launch {

// Pushes scripts/images' runner image with examples/hello and `hungry` (its plan needs hundreds
// of MiB) under /berth/modules and marker at /berth/marker (another marker, another digest) to
// the real node's registry as tag.
Result<testenv::PushedImage> PushRunnerWithModules(const testenv::RealNode& node,
                                                   const std::string& tag,
                                                   const std::string& marker);

class LauncherWorld {
 public:
  static constexpr const char* kImage = "berth/runner:test";

  enum class Node { kTestAgent, kReal };
  // prefix and the running test's name, lower-cased, as a namespace name (60 characters).
  static std::string NamespaceForThisTest(const std::string& prefix);
  // On cluster (null: the shared one; another is on the test node agent only).
  static Result<std::unique_ptr<LauncherWorld>> Create(const std::string& ns,
                                                       Node node = Node::kTestAgent,
                                                       testenv::KubeTestCluster* cluster = nullptr);

  const std::string& Namespace() const { return ns_; }
  kube::KubeClient& Admin() { return *admin_; }
  kube::KubeClient& LauncherClient() { return *launcher_client_; }  // as berthd
  testenv::TestNodeAgent& Agent() { return *agent_; }               // on Node::kTestAgent only
  // The image runs use: kImage on the agent, the registry's reference on the real node.
  const std::string& Image() const { return image_ref_; }

  KubernetesSettings Settings(const std::string& grace = "5m", bool resources = true) const;
  // module: hello or slow (a 4-second apply).
  LaunchRequest Request(const std::string& run_id, const std::string& op, const std::string& module,
                        nlohmann::json runner_config = nlohmann::json::object()) const;

 private:
  explicit LauncherWorld(std::string ns) : ns_(std::move(ns)) {}
  Result<void> GrantLauncherRole(const testenv::KubeTestCluster& cluster);

  std::string ns_;
  std::string image_ref_ = kImage;
  std::optional<sys::TempDir> image_, work_;  // the agent's image folder and work folder
  std::unique_ptr<kube::KubeClient> admin_;
  std::unique_ptr<kube::KubeClient> launcher_client_;
  std::unique_ptr<testenv::TestNodeAgent> agent_;
};

}  // namespace berth::launch
