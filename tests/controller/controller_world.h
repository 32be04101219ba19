// What the controller's end-to-end tests share, started once per test binary: the real
// apiserver with the Terraform CRD, a Git server on loopback holding examples/file under
// stacks/file, the controller's CA, and a node: the test node agent with an image folder of the
// runner and tofu, or the real node (tests/env/real_node.h) with scripts/images' runner image
// and the test provider under /berth/providers, its Pods running as the namespace's `default`
// ServiceAccount, which holds no rights, in a namespace that enforces Pod Security `restricted`;
// and the controller's state service, where runner Pods keep their objects' states.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/reconciler.h"
#include "controller/runner_pki.h"
#include "controller/state_server.h"
#include "git_http_server.h"
#include "kube/kube_api.h"
#include "real_node.h"
#include "sys/files.h"
#include "test_node_agent.h"

namespace berth::controller {

inline constexpr char kTestImage[] = "berth/runner:test";

// Creates the CustomResourceDefinition in file (YAML) and waits until it is served.
Result<void> InstallCrd(kube::KubeApi& api, const std::filesystem::path& file);

struct ControllerWorld {
  enum class Node { kTestAgent, kReal };

  std::unique_ptr<kube::KubeClient> api;
  std::optional<sys::TempDir> dir;
  std::unique_ptr<testenv::TestNodeAgent> agent;
  std::unique_ptr<testenv::GitHttpServer> git;
  std::unique_ptr<RunnerPki> pki;
  std::unique_ptr<StateServer> state;  // for the reconcilers a test makes
  launch::KubernetesSettings settings;
  std::filesystem::path kubeconfig;  // the cluster's admin
  std::filesystem::path image;       // the node agent's runner image folder
  testenv::RealNode* real_node = nullptr;
  std::string image_ref = kTestImage;  // what KUBERNETES_IMAGE names

  // The state service's flags for a berth-controller process: the host its runner Pods
  // reach this test's servers by.
  std::vector<std::string> StateFlags() const;
  std::string StateHost() const;

  // Pod and CA namespaces are made; objects go in ns.
  static Result<std::unique_ptr<ControllerWorld>> Create(const std::string& ns,
                                                         Node node = Node::kTestAgent);

  // A Terraform object of the file stack whose resource is the file at `world` (a path on the
  // node agent's host, or in the real node's runner Pod), its outputs written to
  // <name>-outputs; runner fields are merged into spec.runner.
  nlohmann::json FileStack(const std::string& name, const std::string& ns,
                           const std::filesystem::path& world,
                           nlohmann::json runner = nlohmann::json::object()) const;
};

}  // namespace berth::controller
