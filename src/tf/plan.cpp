// Plan JSON: https://opentofu.org/docs/internals/json-format/ ("Plan Representation").
#include "tf/plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "crypto/digest.h"

namespace berth::tf {
namespace {

using nlohmann::json;

std::vector<std::string> Actions(const json& actions) {
  std::vector<std::string> out;
  for (const auto& a : actions) out.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  return out;
}

Error Malformed(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, "plan JSON: " + std::move(rule));
}

}  // namespace

void PlanEffects::Add(const std::string& address, const std::vector<std::string>& actions,
                      bool importing, bool is_output, std::string_view values) {
  auto has = [&](std::string_view action) {
    return std::find(actions.begin(), actions.end(), action) != actions.end();
  };
  bool create = has("create"), del = has("delete"), update = has("update");
  auto& s = analysis_.summary;
  if (!is_output) {
    if (create && del) {
      ++s.replace;
      analysis_.destructive.push_back(address);
    } else if (create) {
      ++s.add;
    } else if (del) {
      ++s.destroy;
      analysis_.destructive.push_back(address);
    } else if (update) {
      ++s.change;
    }
    if (importing) ++s.import;
  }
  if (!create && !del && !update && !importing) return;
  s.has_changes = true;
  std::string joined;
  for (const auto& action : actions) joined += (joined.empty() ? "" : ",") + action;
  lines_.push_back(address + "|" + joined + "|" + crypto::HmacSha256Hex(key_, values));
}

PlanAnalysis PlanEffects::Finish() && {
  std::sort(lines_.begin(), lines_.end());
  std::string joined;
  for (const auto& line : lines_) joined += line + "\n";
  analysis_.summary.hash = "sha256:" + crypto::Sha256Hex(joined);
  return std::move(analysis_);
}

Result<PlanAnalysis> AnalysePlan(std::string_view show_json, std::string_view key) {
  json plan = json::parse(show_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) return Malformed("not a JSON object");
  PlanEffects effects(key);
  auto account = [&](const std::string& address, const json& change, bool is_output) -> bool {
    if (!change.is_object() || !change.contains("actions") || !change["actions"].is_array()) {
      return false;
    }
    bool importing = change.contains("importing") && !change["importing"].is_null();
    json canonical = {{"before", change.value("before", json())},
                      {"after", change.value("after", json())},
                      {"after_unknown", change.value("after_unknown", json())}};
    effects.Add(address, Actions(change["actions"]), importing, is_output, canonical.dump());
    return true;
  };

  if (plan.contains("resource_changes")) {
    if (!plan["resource_changes"].is_array()) return Malformed("resource_changes: not an array");
    for (const auto& rc : plan["resource_changes"]) {
      if (!rc.is_object() || !rc.contains("address") || !rc["address"].is_string()) {
        return Malformed("resource_changes: an entry has no address");
      }
      if (!account(rc["address"].get<std::string>(), rc.value("change", json()), false)) {
        return Malformed("resource_changes: " + rc["address"].get<std::string>() +
                         " has no change.actions");
      }
    }
  }
  if (plan.contains("output_changes") && plan["output_changes"].is_object()) {
    for (const auto& [name, change] : plan["output_changes"].items()) {
      if (!account("output." + name, change, true)) {
        return Malformed("output_changes: " + name + " has no actions");
      }
    }
  }
  if (plan.contains("resource_drift") && plan["resource_drift"].is_array()) {
    for (const auto& rd : plan["resource_drift"]) {
      if (rd.is_object() && rd.contains("address") && rd["address"].is_string()) {
        effects.Drifted(rd["address"].get<std::string>());
      }
    }
  }
  return std::move(effects).Finish();
}

}  // namespace berth::tf
