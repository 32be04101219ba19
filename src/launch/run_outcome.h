// A runner's end as every launcher reads it: its exit status and its result document.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "launch/launcher.h"

namespace berth::launch {

// The outcome of a runner that exited with exit_code (nullopt: nobody saw it exit, as for a
// runner re-attached after a restart) and wrote result_text (possibly empty or cut short):
// success only with a result whose error is null (and exit 0 when known); the result's error
// kind when it has one; RunnerFailed when there is no result.
RunOutcome OutcomeFromResult(std::optional<int> exit_code, std::string_view result_text);

// How a kubernetes-agent reports a run's end to berthd: what its launcher saw ({"exit_code",
// "ended_as": a RunnerEnd name or "", "message", "image_id"}), never the result itself, which
// the runner posts to berthd on its own.
nlohmann::json AgentReportOf(const RunOutcome& outcome);
// berthd's reading of such a report, with the result the runner posted (empty: none): an end
// the agent saw (OOMKilled, ImagePullBackOff, ...) as it says; otherwise the posted result
// decides, as for every launcher: an agent cannot make a run succeed. Bounded: a message is cut
// at 4 KiB; fields of the wrong type count as absent.
RunOutcome OutcomeFromAgentReport(const nlohmann::json& report, std::string_view posted_result);

}  // namespace berth::launch
