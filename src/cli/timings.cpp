#include "cli/timings.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/deployment_result.h"
#include "core/deployment_state.h"
#include "core/time_format.h"

namespace berth::cli {
namespace {

using nlohmann::json;

std::string SpanName(DeploymentState state) {
  if (state == DeploymentState::kDispatched) return "launch";
  if (state == DeploymentState::kRunning) return "run";
  return std::string(DeploymentStateName(state));  // queued, waiting_approval
}

double Seconds(const json& object) {
  auto it = object.find("seconds");
  return it != object.end() && it->is_number() ? it->get<double>() : 0;
}

// The TF steps of one run, as its runner reported them, and the rest of the time from its
// launch to its end (the runner starts while berthd records the launch). The runner runs
// `version` beside `init`: the two overlap by the shorter one.
json RunSteps(const std::optional<RunEnd>& end, double launched_seconds) {
  json steps = json::array();
  double in_steps = 0;
  std::optional<double> version, init;
  for (const RunStep& step : end && end->run ? end->run->steps : std::vector<RunStep>{}) {
    in_steps += step.seconds;
    if (step.name == "version") version = step.seconds;
    if (step.name == "init") init = step.seconds;
    steps.push_back({{"name", step.name}, {"seconds", step.seconds}});
  }
  if (version && init) in_steps -= std::min(*version, *init);
  if (!steps.empty() && launched_seconds >= in_steps)
    steps.push_back({{"name", "(outside TF)"}, {"seconds", launched_seconds - in_steps}});
  return steps;
}

}  // namespace

json DeploymentTimings(const json& deployment, int64_t now_ms) {
  const std::optional<DeploymentState> state = StateOf(deployment);
  const json transitions = deployment.value("transitions", json::array());
  const DeploymentResult result = DeploymentResultFromJson(deployment.value("result", json()));
  std::vector<std::pair<DeploymentState, int64_t>> moments;
  for (const json& t : transitions) {
    if (!t.is_object()) continue;
    auto at = ParseRfc3339Millis(t.value("at", ""));
    auto to = StateOf(t);
    if (at && to) moments.emplace_back(*to, *at);
  }
  // A deployment with two runs: the first is the plan run, whose outcome the result keeps.
  int runs = 0;
  for (const auto& [s, at] : moments) runs += s == DeploymentState::kRunning ? 1 : 0;
  json spans = json::array();
  int run = 0;
  int64_t launched_at = 0;
  for (size_t i = 0; i < moments.size(); ++i) {
    const auto& [s, at] = moments[i];
    if (IsTerminal(s)) break;
    bool last = i + 1 == moments.size();
    int64_t until = last ? now_ms : moments[i + 1].second;
    json span = {{"name", SpanName(s)}, {"seconds", static_cast<double>(until - at) / 1000}};
    if (last) span["so_far"] = true;
    if (s == DeploymentState::kDispatched) launched_at = at;
    if (s == DeploymentState::kRunning) {
      ++run;
      bool plan_run = run == 1 && (runs > 1 || state == DeploymentState::kWaitingApproval);
      span["steps"] =
          RunSteps(plan_run ? result.plan_run : result.end,
                   static_cast<double>(until - (launched_at ? launched_at : at)) / 1000);
    }
    spans.push_back(std::move(span));
  }
  double total = 0;
  for (const json& span : spans) total += Seconds(span);
  return {{"id", deployment.value("id", "")},
          {"state", deployment.value("state", "")},
          {"total_seconds", total},
          {"spans", spans}};
}

std::string RenderTimings(const json& timings) {
  const std::optional<DeploymentState> state = StateOf(timings);
  std::string out = fmt::format("{}  {}  {:.3f} s{}\n", timings.value("id", ""),
                                timings.value("state", ""), timings["total_seconds"].get<double>(),
                                state && IsTerminal(*state) ? "" : " so far");
  for (const json& span : timings["spans"]) {
    out += fmt::format("  {:<22}{:>10.3f} s{}\n", span.value("name", ""), Seconds(span),
                       span.value("so_far", false) ? " so far" : "");
    for (const json& step : span.value("steps", json::array()))
      out += fmt::format("    {:<20}{:>10.3f} s\n", step.value("name", ""), Seconds(step));
  }
  return out;
}

}  // namespace berth::cli
