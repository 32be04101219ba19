// Plans kept in the Kubernetes API (seed 000): a plan file as Secrets of at most 768 KiB each
// (below the API's object size limit once base64-encoded), `tfplan-<name>-<index>` beside
// their object and owned by it; the first one says how many there are and the whole file's
// SHA-256, which a load checks. A save removes the chunks a longer plan before it left.
#pragma once

#include <string>
#include <string_view>

#include "controller/terraform_object.h"
#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::controller {

inline constexpr size_t kPlanChunkBytes = size_t{768} << 10;

Result<void> SavePlan(kube::KubeApi& api, const launch::TerraformObject& object,
                      const std::string& plan_id, const std::string& plan,
                      const std::string& field_manager);

// The plan saved under plan_id, checked whole against sha256 (hex): the digest the controller
// kept where runner Pods cannot write (the object's status), since their service account may
// write Secrets and so rewrite the chunks and the digest beside them. NotFound when another
// plan (or none) is kept.
Result<std::string> LoadPlan(kube::KubeApi& api, const launch::TerraformObject& object,
                             const std::string& plan_id, std::string_view sha256);

}  // namespace berth::controller
