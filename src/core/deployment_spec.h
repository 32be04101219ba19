// What a deployment is asked to do, typed: parsed once from the request (every field checked
// and named), kept in the store as JSON written here, and read back by the dispatcher, the
// gateway and the API without another look at untyped JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/run_labels.h"

namespace berth {

enum class DeploymentOp { kPlan, kApply, kDestroy };
std::string_view DeploymentOpName(DeploymentOp op);

struct DeploymentSpec {
  DeploymentOp op = DeploymentOp::kPlan;
  // Exactly one: a folder on berthd's machine (an embedded berthd only), or an uploaded bundle.
  std::string source_path;
  std::string source_bundle;
  nlohmann::json variables = nlohmann::json::object();  // name -> value; values may be secrets
  bool plan_only = false;
  bool approval_required = false;
  bool allow_destroy = false;
  // The project's and environment's labels when it was created: later edits do not change it.
  Labels labels;
  // The API token that asked for it (set by the server, like labels).
  std::string created_by;

  // A request body ($.op, $.source, ...): unknown fields, wrong types and contradictions are
  // errors naming every field. Labels and created_by are not the caller's to give: the server sets
  // them.
  static Result<DeploymentSpec> FromRequest(const nlohmann::json& body);
  // What ToJson wrote (labels and created_by included).
  static Result<DeploymentSpec> FromStored(const nlohmann::json& stored);
  nlohmann::json ToJson() const;

  // Its only run is a plan.
  bool PlanOnly() const { return op == DeploymentOp::kPlan || plan_only; }
  // It stops at its plan until a person approves that plan.
  bool NeedsApproval() const { return !PlanOnly() && approval_required; }
  // Variables are shown by name only.
  std::vector<std::string> VariableNames() const;

  bool operator==(const DeploymentSpec&) const = default;
};

}  // namespace berth
