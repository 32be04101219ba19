// A `Terraform` object (terraforms.berth.dev/v1alpha1, docs/controller.md) as berth-controller
// reads it, and the runner Pod it gets (seed 000).
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kube/resource.h"
#include "launch/kubernetes/pod_builder.h"
#include "launch/kubernetes/runner_pod_config.h"
#include "launch/kubernetes/settings.h"

namespace berth::controller {

inline constexpr std::string_view kApiVersion = "berth.dev/v1alpha1";
inline constexpr std::string_view kKind = "Terraform";
inline constexpr std::string_view kLauncherName = "berth-controller";
inline constexpr kube::ResourceKind kTerraforms{kApiVersion, kKind, "terraforms"};
// spec.retryInterval's default.
inline constexpr std::chrono::seconds kDefaultRetryInterval{60};

struct TerraformObject {
  std::string name;
  std::string ns;
  std::string uid;
  int64_t generation = 0;
  nlohmann::json spec;  // as saved (the CRD's schema checked it on the API server)
  launch::RunnerPodConfig runner;

  // Every error names its field; an object without a namespace is in "default" (a file given
  // to `berth render pod`).
  static Result<TerraformObject> Parse(const nlohmann::json& object);
};

// A duration of the spec (interval, retryInterval: Go durations), at least a second; fallback
// when it is absent.
std::chrono::seconds SpecDuration(const nlohmann::json& spec, const char* key,
                                  std::chrono::seconds fallback);

// "namespace/name": how the controller's queue and indexes name an object.
std::string ObjectKey(const nlohmann::json& object);

// The Secret that holds the runner Pod's certificate, its key and the controller's CA.
inline std::string TlsSecretName(std::string_view object_name) {
  return std::string(object_name) + "-tf-runner-tls";
}

// The controller's runner defaults: the Kubernetes launcher's KUBERNETES_* variables
// (docs/kubernetes.md), except KUBERNETES_NAMESPACE, which each object's own namespace replaces.
Result<launch::KubernetesSettings> ControllerSettings(kube::Environment env);

// The runner Pod `<name>-tf-runner` for a run of the object at this source revision: the
// Kubernetes launcher's Pod builder with the object's spec.runner, serving on port 30000.
Result<launch::RunnerManifests> BuildRunnerPod(const launch::KubernetesSettings& settings,
                                               const TerraformObject& object,
                                               std::string_view revision);

}  // namespace berth::controller
