// What in a runner's Pod template is weaker than berth's hardened default or reaches beyond
// the run: a security context that drops one of its settings, a privileged container, a volume
// that is not scratch space or configuration (a hostPath, a Secret, a claim), an environment
// read from a Secret. Only an admin token may save such a runner (the API's 403 names each
// field): a configure token is not admin.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace berth::launch {

// template_spec: a runner's podTemplate.spec as RunnerPodConfig keeps it; path: where it sits
// in the request, for the field names.
FieldErrors PodRelaxations(const nlohmann::json& template_spec, const std::string& path);

}  // namespace berth::launch
