#include "launch/run_outcome.h"

#include <fmt/format.h>

#include "core/enum_names.h"

namespace berth::launch {
namespace {

constexpr EnumNames<RunnerEnd, 12> kRunnerEndNames{{
    {RunnerEnd::kConnectionFailed, "RunnerConnectionFailed"},
    {RunnerEnd::kQuotaExhausted, "RunnerQuotaExhausted"},
    {RunnerEnd::kOomKilled, "OOMKilled"},
    {RunnerEnd::kEvicted, "Evicted"},
    {RunnerEnd::kDeadlineExceeded, "DeadlineExceeded"},
    {RunnerEnd::kImagePullFailed, "ImagePullBackOff"},
    {RunnerEnd::kConfigError, "CreateContainerConfigError"},
    {RunnerEnd::kUnschedulable, "Unschedulable"},
    {RunnerEnd::kLost, "RunnerLost"},
    {RunnerEnd::kCancelled, "Cancelled"},
    {RunnerEnd::kFailed, "RunnerFailed"},
    {RunnerEnd::kLimitExceeded, "LimitExceeded"},
}};

}  // namespace

std::string_view RunnerEndName(RunnerEnd end) {
  return NameOf(kRunnerEndNames, end, "RunnerFailed");
}

std::string_view RunOutcome::FailureName() const {
  if (const auto* kind = std::get_if<RunErrorKind>(&failure)) return RunErrorKindName(*kind);
  if (const auto* end = std::get_if<RunnerEnd>(&failure)) return RunnerEndName(*end);
  return {};
}

RunOutcome RunnerEnded(RunnerEnd end, std::string message) {
  RunOutcome outcome;
  outcome.failure = end;
  outcome.message = std::move(message);
  return outcome;
}

RunOutcome OutcomeFromResult(std::optional<int> exit_code, std::string_view result_text) {
  RunOutcome outcome;
  outcome.exit_code = exit_code.value_or(-1);
  auto result = ParseRunResult(result_text);
  if (result) {
    if (result->error) {
      outcome.failure = result->error->kind;
      outcome.message = result->error->message;
    } else if (exit_code.value_or(0) == 0) {
      outcome.succeeded = true;
    } else {
      outcome.failure = RunnerEnd::kFailed;
      outcome.message = fmt::format("the runner exited {} with a result of success", *exit_code);
    }
    outcome.result = std::move(*result);
    return outcome;
  }
  outcome.failure = RunnerEnd::kFailed;
  if (result_text.empty()) {
    outcome.message = exit_code ? fmt::format("the runner exited {} without a result", *exit_code)
                                : std::string("the runner ended without a result");
  } else {
    outcome.message = "the runner's result was refused: " + result.error().message;
  }
  return outcome;
}

}  // namespace berth::launch
