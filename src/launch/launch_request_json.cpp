#include "launch/launch_request_json.h"

#include <set>

namespace berth {

// What the run is (core/runner_invocation.h); where it runs is the agent's.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunnerInvocation, op, gateway, run_id, inputs_hash,
                                                state_backend, backend_config, lock, providers,
                                                module, config, bin, approved_plan,
                                                approved_plan_sha256, plan_destroy, allow_destroy,
                                                state_encryption, log_recipient)

namespace launch {
namespace {

using nlohmann::json;

Result<void> OnlyKnownKeys(const json& doc, const std::set<std::string>& known,
                           const std::string& where) {
  if (!doc.is_object()) return MakeError(ErrorKind::kInvalidArgument, where + " must be an object");
  for (const auto& [key, value] : doc.items()) {
    if (!known.contains(key))
      return MakeError(ErrorKind::kInvalidArgument, where + "." + key + " is not a field");
  }
  return {};
}

// What the agent's wire carries of the runner: its configuration as saved, which the agent
// parses itself.
json SavedConfiguration(const LaunchRequest& request) {
  const auto* agent = std::get_if<AgentRunnerSettings>(&request.runner);
  return agent != nullptr ? agent->saved : json::object();
}

}  // namespace

json LaunchRequestToJson(const LaunchRequest& request) {
  return {{"run_id", request.run_id},
          {"revision", request.revision},
          {"org_id", request.org_id},
          {"runner_id", request.runner_id},
          {"invocation", request.invocation},
          {"labels", request.labels},
          {"runner_configuration", SavedConfiguration(request)}};
}

Result<LaunchRequest> LaunchRequestFromJson(const json& doc) {
  if (auto known = OnlyKnownKeys(doc,
                                 {"run_id", "revision", "org_id", "runner_id", "invocation",
                                  "labels", "runner_configuration"},
                                 "request");
      !known)
    return known.error();
  if (auto known = OnlyKnownKeys(
          doc.value("invocation", json::object()),
          {"op", "gateway", "run_id", "inputs_hash", "state_backend", "backend_config", "lock",
           "providers", "module", "config", "bin", "approved_plan", "approved_plan_sha256",
           "plan_destroy", "allow_destroy", "state_encryption", "log_recipient"},
          "request.invocation");
      !known)
    return known.error();
  try {
    LaunchRequest request;
    request.run_id = doc.at("run_id").get<std::string>();
    request.revision = doc.value("revision", "1");
    request.org_id = doc.at("org_id").get<std::string>();
    request.runner_id = doc.at("runner_id").get<std::string>();
    request.invocation = doc.value("invocation", json::object()).get<RunnerInvocation>();
    request.labels = doc.value("labels", json::object()).get<std::map<std::string, std::string>>();
    auto runner = ParseRunnerSettings(RunnerType::kKubernetesAgent,
                                      doc.value("runner_configuration", json::object()));
    if (!runner) return runner.error();
    request.runner = std::move(*runner);
    if (request.run_id.empty() || request.invocation.run_id != request.run_id)
      return MakeError(ErrorKind::kInvalidArgument,
                       "request.run_id must be set and be the invocation's run_id");
    return request;
  } catch (const json::exception& e) {
    return MakeError(ErrorKind::kInvalidArgument, std::string("request: ") + e.what());
  }
}

}  // namespace launch
}  // namespace berth
