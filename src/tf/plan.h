// Reading a plan: counts, the effect hash that approval compares, destructive addresses and
// drift, from `show -json` (the JSON output format of tofu/terraform) or, without starting TF,
// from tofu's plan file itself (plan_file.h).
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
  std::string tf_version;                // of the TF that wrote it (read from plan files only)
};

// Counts a plan's changes and hashes its effect, whatever the plan was read from.
// key may be empty (the hash is then unkeyed, and the summary says so).
// The hash is sha256 over the sorted lines "<address>|<actions>|HMAC-SHA256(key, values)",
// where values stand for the change's before and after (unknowns included): the same effect
// planned twice gives the same hash, and no value can be read back from it.
class PlanEffects {
 public:
  explicit PlanEffects(std::string_view key) : key_(key) { analysis_.summary.keyed = !key.empty(); }

  // actions as the JSON format names them ("create", "delete", ...), in order.
  void Add(const std::string& address, const std::vector<std::string>& actions, bool importing,
           bool is_output, std::string_view values);
  void Drifted(std::string address) { analysis_.drifted.push_back(std::move(address)); }
  void WrittenBy(std::string tf_version) { analysis_.tf_version = std::move(tf_version); }
  PlanAnalysis Finish() &&;

 private:
  std::string_view key_;
  PlanAnalysis analysis_;
  std::vector<std::string> lines_;
};

// From `show -json`: values are the canonical JSON of before, after and after_unknown.
Result<PlanAnalysis> AnalysePlan(std::string_view show_json, std::string_view key);

}  // namespace berth::tf
