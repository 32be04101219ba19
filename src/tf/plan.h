// Reading a plan from `show -json` (the JSON output format of tofu/terraform): counts, the
// effect hash that approval compares, destructive addresses and drift.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/run_result.h"

namespace berth::tf {

struct PlanAnalysis {
  PlanSummary summary;
  std::vector<std::string> destructive;  // addresses deleted or replaced
  std::vector<std::string> drifted;      // addresses in resource_drift
};

// key may be empty (the hash is then unkeyed, and the summary says so).
// The hash is sha256 over the sorted lines "<address>|<actions>|HMAC-SHA256(key, change)",
// where change is the canonical JSON of the change's before, after and after_unknown: the same
// effect planned twice gives the same hash, and no value can be read back from it.
Result<PlanAnalysis> AnalysePlan(std::string_view show_json, std::string_view key);

}  // namespace berth::tf
