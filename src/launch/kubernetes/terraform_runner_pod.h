// A `Terraform` object (terraforms.berth.dev/v1alpha1, docs/controller.md) as far as its runner
// Pod needs it, and that Pod (seed 000): built here, in the launcher's module, so that
// berth-controller and `berth render pod --terraform` render the same Pod from one builder.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kube/kube_config.h"
#include "launch/kubernetes/pod_builder.h"
#include "launch/kubernetes/runner_pod_config.h"
#include "launch/kubernetes/settings.h"

namespace berth::launch {

inline constexpr std::string_view kTerraformApiVersion = "berth.dev/v1alpha1";
inline constexpr std::string_view kTerraformKind = "Terraform";
// The launcher label of the controller's runner Pods.
inline constexpr std::string_view kControllerLauncherName = "berth-controller";

struct TerraformObject {
  std::string name;
  std::string ns;
  std::string uid;
  int64_t generation = 0;
  nlohmann::json spec;  // as saved (the CRD's schema checked it on the API server)
  RunnerPodConfig runner;

  // Every error names its field; an object without a namespace is in "default" (a file given
  // to `berth render pod`).
  static Result<TerraformObject> Parse(const nlohmann::json& object);
};

// The Secret that holds the runner Pod's certificate, its key and the controller's CA.
inline std::string TlsSecretName(std::string_view object_name) {
  return std::string(object_name) + "-tf-runner-tls";
}

// The controller's runner defaults: the Kubernetes launcher's KUBERNETES_* variables
// (docs/kubernetes.md), except KUBERNETES_NAMESPACE, which each object's own namespace replaces.
Result<KubernetesSettings> ControllerRunnerSettings(kube::Environment env);

// The runner Pod `<name>-tf-runner` for a run of the object at this source revision: the
// Kubernetes launcher's Pod builder with the object's spec.runner, serving on port 30000.
Result<RunnerManifests> BuildTerraformRunnerPod(const KubernetesSettings& settings,
                                                const TerraformObject& object,
                                                std::string_view revision);

}  // namespace berth::launch
