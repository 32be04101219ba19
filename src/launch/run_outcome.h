// A run's end, joined in one place: how its runner ended (what its launcher saw) with the
// result the runner posted to berthd or, failing that, wrote where its launcher reads.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "launch/launcher.h"

namespace berth::launch {

// The run's outcome. The posted result is preferred, the written one is the fallback; either is
// read with the bounded parser, and one whose op is not expected_op (the run's) is not this
// run's. Success needs a result whose error is null and, when the exit status is known, exit 0;
// a result's error kind is the failure; an end the launcher saw (OOMKilled, evicted, ...) is the
// failure whatever was posted, except kLost and kFailed, which a valid result overrides. A
// runner asked to stop that left no result was cancelled.
RunOutcome JoinRunEnd(const RunnerExit& exit, std::optional<std::string_view> posted_result,
                      std::string_view expected_op);

// How a kubernetes-agent reports a run's end to berthd: what its launcher saw ({"exit_code": -1
// when unknown, "ended_as": a RunnerEnd name or "", "message", "image_id", and
// "stop_requested": true when it was}), never the result, which the runner posts on its own.
nlohmann::json AgentReportOf(const RunnerExit& exit);
// berthd's reading of such a report, bounded: a message is cut at 4 KiB, fields of the wrong
// type count as absent, and a written result is never taken from it (an agent cannot make a run
// succeed: only the result the runner posted can).
RunnerExit RunnerExitFromAgentReport(const nlohmann::json& report);

}  // namespace berth::launch
