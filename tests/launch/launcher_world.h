// A namespace ready for the Kubernetes launcher, for its tests and its benchmark: Pod Security
// `restricted` enforced, deploy/kubernetes/launcher-rbac.yaml bound to a service account whose
// token the launcher's client carries, the runner image as a folder (the runner at /runner,
// tofu on PATH, examples/hello and examples/slow under /berth/modules), and the test node agent
// playing the kubelet.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/kube_api.h"
#include "launch/kubernetes/settings.h"
#include "launch/launcher.h"
#include "sys/files.h"
#include "test_node_agent.h"

namespace berth::launch {

class LauncherWorld {
 public:
  static constexpr const char* kImage = "berth/runner:test";

  static Result<std::unique_ptr<LauncherWorld>> Create(const std::string& ns);

  const std::string& Namespace() const { return ns_; }
  kube::KubeClient& Admin() { return *admin_; }
  kube::KubeClient& LauncherClient() { return *launcher_client_; }  // as berthd
  testenv::TestNodeAgent& Agent() { return *agent_; }

  KubernetesSettings Settings(const std::string& grace = "5m", bool resources = true) const;
  // module: hello or slow (a 4-second apply).
  LaunchRequest Request(const std::string& run_id, const std::string& op, const std::string& module,
                        nlohmann::json runner_config = nlohmann::json::object()) const;

 private:
  LauncherWorld(std::string ns, sys::TempDir image, sys::TempDir work)
      : ns_(std::move(ns)), image_(std::move(image)), work_(std::move(work)) {}
  Result<void> GrantLauncherRole();

  std::string ns_;
  sys::TempDir image_, work_;
  std::unique_ptr<kube::KubeClient> admin_;
  std::unique_ptr<kube::KubeClient> launcher_client_;
  std::unique_ptr<testenv::TestNodeAgent> agent_;
};

}  // namespace berth::launch
