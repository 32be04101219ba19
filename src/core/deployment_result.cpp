#include "core/deployment_result.h"

namespace berth {
namespace {

using nlohmann::json;

json RunEndToJson(const RunEnd& end) {
  json out = {{"succeeded", end.succeeded}, {"exit_code", end.exit_code}};
  if (!end.succeeded) out["error"] = {{"kind", end.error_kind}, {"message", end.error_message}};
  if (end.run) out["run"] = RunResultToJson(*end.run);
  if (!end.image_id.empty()) out["image_id"] = end.image_id;
  return out;
}

std::string TextOf(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<RunEnd> RunEndFromJson(const json& stored) {
  if (!stored.is_object() || !stored.contains("succeeded")) return std::nullopt;
  RunEnd end;
  end.succeeded = stored["succeeded"].is_boolean() && stored["succeeded"].get<bool>();
  if (auto code = stored.find("exit_code"); code != stored.end() && code->is_number_integer())
    end.exit_code = code->get<int>();
  if (auto error = stored.find("error"); error != stored.end() && error->is_object()) {
    end.error_kind = TextOf(*error, "kind");
    end.error_message = TextOf(*error, "message");
  }
  if (auto run = stored.find("run"); run != stored.end() && run->is_object()) {
    if (auto parsed = ParseRunResult(run->dump())) end.run = std::move(*parsed);
  }
  end.image_id = TextOf(stored, "image_id");
  return end;
}

std::optional<PlanSummary> PlanFromJson(const json& stored, const char* key) {
  auto plan = stored.find(key);
  if (plan == stored.end()) return std::nullopt;
  auto parsed = ParsePlanSummary(*plan);
  return parsed ? std::optional<PlanSummary>(std::move(*parsed)) : std::nullopt;
}

}  // namespace

json DeploymentResultToJson(const DeploymentResult& result) {
  if (result.Empty()) return nullptr;
  json plan = result.plan ? PlanSummaryToJson(*result.plan) : json::object();
  json out;
  if (result.end) {
    out = RunEndToJson(*result.end);
    if (result.plan) out["approved_plan"] = std::move(plan);
  } else {
    out = {{"plan", std::move(plan)}, {"state_version", result.state_version}};
  }
  if (result.plan_run) out["plan_run"] = RunEndToJson(*result.plan_run);
  return out;
}

DeploymentResult DeploymentResultFromJson(const json& stored) {
  DeploymentResult result;
  if (!stored.is_object()) return result;
  result.end = RunEndFromJson(stored);
  result.plan = PlanFromJson(stored, result.end ? "approved_plan" : "plan");
  if (auto version = stored.find("state_version");
      version != stored.end() && version->is_number_integer())
    result.state_version = version->get<int64_t>();
  if (auto plan_run = stored.find("plan_run"); plan_run != stored.end())
    result.plan_run = RunEndFromJson(*plan_run);
  return result;
}

}  // namespace berth
