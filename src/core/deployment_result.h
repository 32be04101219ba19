// What a deployment came to (docs/api.md, a deployment's `result`): how its last run ended, and
// for one that waits for approval, or applied an approved plan, that plan and the run that made
// it. One type in the store, the dispatcher and the API; its JSON is the API's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/run_result.h"

namespace berth {

// How one of its runs ended, as berthd records it.
struct RunEnd {
  bool succeeded = false;
  int exit_code = -1;            // -1: its runner never exited, or nobody saw it
  std::string error_kind;        // empty on success: the result's error kind or how its runner
                                 // ended ("Apply", "RunnerLost")
  std::string error_message;     // why, in words
  std::optional<RunResult> run;  // the runner's result document, when it gave a valid one
  std::string image_id;          // the image its runner ran, when the launcher knows

  bool operator==(const RunEnd&) const = default;
};

struct DeploymentResult {
  std::optional<RunEnd> end;  // its last run's end, once it has ended
  // The plan that waits for approval, then the one its apply applied: the plan run's plan.
  std::optional<PlanSummary> plan;
  int64_t state_version = 0;       // of the environment's state the waiting plan was made on
  std::optional<RunEnd> plan_run;  // how the run that made that plan ended

  // Nothing yet: null in JSON.
  bool Empty() const { return !end && !plan && !plan_run; }
  // The plan's hash ("sha256:..."), empty when there is none.
  std::string PlanHash() const { return plan ? plan->hash : std::string(); }
  bool operator==(const DeploymentResult&) const = default;
};

// The API's shape: an ended deployment's {succeeded, exit_code, error?, run?, image_id?,
// approved_plan?, plan_run?}; a waiting one's {plan, state_version, plan_run}; null for none.
nlohmann::json DeploymentResultToJson(const DeploymentResult& result);
// Read back from what berthd stored; a part it cannot read (a row of an older berthd) is left
// out rather than failing the deployment's read.
DeploymentResult DeploymentResultFromJson(const nlohmann::json& stored);

}  // namespace berth
