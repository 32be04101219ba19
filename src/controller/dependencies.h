// spec.dependsOn: an object runs only once each Terraform object it names is Ready at its
// current generation (docs/controller.md, "Dependencies").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/terraform_object.h"
#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::controller {

// "namespace/name" of each object the object depends on (its own namespace unless named).
std::vector<std::string> DependencyKeys(const nlohmann::json& object);

// Ready, at the generation it was last reconciled: what a dependent waits for. Empty when not
// ready, else a value that changes when it applies something new (its applied revision).
std::string ReadySignal(const nlohmann::json& object);

// Why the object cannot run yet: empty when every dependency is ready; else the reason
// (DependencyNotReady, DependencyCycle) and a message naming the dependency.
struct DependencyWait {
  std::string reason;
  std::string message;
};
Result<DependencyWait> CheckDependencies(kube::KubeApi& api, const launch::TerraformObject& object);

}  // namespace berth::controller
