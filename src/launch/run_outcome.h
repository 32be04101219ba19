// A runner's end as every launcher reads it: its exit status and its result document.
#pragma once

#include <optional>
#include <string_view>

#include "launch/launcher.h"

namespace berth::launch {

// The outcome of a runner that exited with exit_code (nullopt: nobody saw it exit, as for a
// runner re-attached after a restart) and wrote result_text (possibly empty or cut short):
// success only with a result whose error is null (and exit 0 when known); the result's error
// kind when it has one; RunnerFailed when there is no result.
RunOutcome OutcomeFromResult(std::optional<int> exit_code, std::string_view result_text);

}  // namespace berth::launch
