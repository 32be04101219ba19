// Plan JSON: https://opentofu.org/docs/internals/json-format/ ("Plan Representation").
#include "tf/plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "crypto/digest.h"

namespace berth::tf {
namespace {

using nlohmann::json;

std::string JoinActions(const json& actions) {
  std::string out;
  for (const auto& a : actions) {
    if (!out.empty()) out += ",";
    out += a.get<std::string>();
  }
  return out;
}

bool Has(const json& actions, std::string_view action) {
  return std::any_of(actions.begin(), actions.end(), [&](const json& a) {
    return a.is_string() && a.get<std::string>() == action;
  });
}

Error Malformed(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, "plan JSON: " + std::move(rule));
}

}  // namespace

Result<PlanAnalysis> AnalysePlan(std::string_view show_json, std::string_view key) {
  json plan = json::parse(show_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) return Malformed("not a JSON object");
  PlanAnalysis analysis;
  auto& s = analysis.summary;
  s.keyed = !key.empty();
  std::vector<std::string> lines;

  auto account = [&](const std::string& address, const json& change, bool is_output) -> bool {
    if (!change.is_object() || !change.contains("actions") || !change["actions"].is_array()) {
      return false;
    }
    const json& actions = change["actions"];
    bool create = Has(actions, "create"), del = Has(actions, "delete");
    bool update = Has(actions, "update");
    bool importing = change.contains("importing") && !change["importing"].is_null();
    if (!is_output) {
      if (create && del) {
        ++s.replace;
        analysis.destructive.push_back(address);
      } else if (create) {
        ++s.add;
      } else if (del) {
        ++s.destroy;
        analysis.destructive.push_back(address);
      } else if (update) {
        ++s.change;
      }
      if (importing) ++s.import;
    }
    bool effect = create || del || update || importing;
    if (!effect) return true;
    s.has_changes = true;
    json canonical = {{"before", change.value("before", json())},
                      {"after", change.value("after", json())},
                      {"after_unknown", change.value("after_unknown", json())}};
    lines.push_back(address + "|" + JoinActions(actions) + "|" +
                    crypto::HmacSha256Hex(key, canonical.dump()));
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
        analysis.drifted.push_back(rd["address"].get<std::string>());
      }
    }
  }
  std::sort(lines.begin(), lines.end());
  std::string joined;
  for (const auto& line : lines) joined += line + "\n";
  s.hash = "sha256:" + crypto::Sha256Hex(joined);
  return analysis;
}

}  // namespace berth::tf
