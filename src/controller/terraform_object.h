// What berth-controller reads of a `Terraform` object beyond its runner Pod (which
// launch/kubernetes/terraform_runner_pod.h builds): its resource, its durations, its key.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/resource.h"
#include "launch/kubernetes/terraform_runner_pod.h"

namespace berth::controller {

inline constexpr kube::ResourceKind kTerraforms{launch::kTerraformApiVersion,
                                                launch::kTerraformKind, "terraforms"};
// spec.retryInterval's default.
inline constexpr std::chrono::seconds kDefaultRetryInterval{60};

// A duration of the spec (interval, retryInterval: Go durations), at least a second; fallback
// when it is absent.
std::chrono::seconds SpecDuration(const nlohmann::json& spec, const char* key,
                                  std::chrono::seconds fallback);

// "namespace/name": how the controller's queue and indexes name an object.
std::string ObjectKey(const nlohmann::json& object);

}  // namespace berth::controller
