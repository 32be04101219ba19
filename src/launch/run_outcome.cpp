#include "launch/run_outcome.h"

#include <fmt/format.h>

#include "core/enum_names.h"

namespace berth::launch {
namespace {

constexpr EnumNames<RunnerEnd, 14> kRunnerEndNames{{
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
    {RunnerEnd::kAgentUnavailable, "AgentUnavailable"},
    {RunnerEnd::kAgentRejected, "AgentRejected"},
}};

}  // namespace

std::string_view RunnerEndName(RunnerEnd end) {
  return NameOf(kRunnerEndNames, end, "RunnerFailed");
}

std::optional<RunnerEnd> RunnerEndNamed(std::string_view name) {
  return ValueOf(kRunnerEndNames, name);
}

std::string_view RunOutcome::FailureName() const {
  if (const auto* kind = std::get_if<RunErrorKind>(&failure)) return RunErrorKindName(*kind);
  if (const auto* end = std::get_if<RunnerEnd>(&failure)) return RunnerEndName(*end);
  return {};
}

RunnerExit RunnerStopped(RunnerEnd end, std::string message) {
  return RunnerExit{.ended_as = end, .message = std::move(message)};
}

namespace {

// A failed outcome: how the runner ended, and why in words.
RunOutcome RunnerEnded(RunnerEnd end, std::string message) {
  RunOutcome outcome;
  outcome.failure = end;
  outcome.message = std::move(message);
  return outcome;
}

// The outcome of a runner that exited with exit_code (nullopt: nobody saw it exit) and left
// result_text (possibly empty or cut short), which the parser read as result, for a run of
// expected_op.
RunOutcome OutcomeFromResult(std::optional<int> exit_code, std::string_view result_text,
                             Result<RunResult> result, std::string_view expected_op) {
  RunOutcome outcome;
  outcome.exit_code = exit_code.value_or(-1);
  outcome.failure = RunnerEnd::kFailed;
  if (!result) {
    if (result_text.empty()) {
      outcome.message = exit_code ? fmt::format("the runner exited {} without a result", *exit_code)
                                  : std::string("the runner ended without a result");
    } else {
      outcome.message = "the runner's result was refused: " + result.error().message;
    }
    return outcome;
  }
  if (result->op != expected_op) {
    outcome.message =
        fmt::format("the runner's result was refused: it is a {} run's, not this {} run's",
                    result->op, expected_op);
    return outcome;
  }
  if (result->error) {
    outcome.failure = result->error->kind;
    outcome.message = result->error->message;
  } else if (exit_code.value_or(0) == 0) {
    outcome.failure = std::monostate();
    outcome.succeeded = true;
  } else {
    outcome.message = fmt::format("the runner exited {} with a result of success", *exit_code);
  }
  outcome.result = std::move(*result);
  return outcome;
}

}  // namespace

RunOutcome JoinRunEnd(const RunnerExit& exit, std::optional<std::string_view> posted_result,
                      std::string_view expected_op) {
  // Each text is parsed once, here.
  std::optional<Result<RunResult>> posted;
  if (posted_result) posted = ParseRunResult(*posted_result);
  const bool posted_valid = posted && *posted && (*posted)->op == expected_op;
  const bool launcher_knows =
      exit.ended_as && *exit.ended_as != RunnerEnd::kLost && *exit.ended_as != RunnerEnd::kFailed;
  RunOutcome outcome;
  if (exit.ended_as && (launcher_knows || !posted_valid)) {
    outcome = RunnerEnded(*exit.ended_as, exit.message);
    outcome.exit_code = exit.exit_code.value_or(-1);
  } else {
    // The posted result when it is one of this run's; else what the runner wrote, whose
    // refusal is the clearer message when the posted text was refused too.
    outcome =
        posted_valid || (posted_result && exit.written_result.empty())
            ? OutcomeFromResult(exit.exit_code, *posted_result, std::move(*posted), expected_op)
            : OutcomeFromResult(exit.exit_code, exit.written_result,
                                ParseRunResult(exit.written_result), expected_op);
    if (!outcome.result && exit.stop_requested) {
      outcome.failure = RunnerEnd::kCancelled;
      outcome.message = "cancelled";
    } else if (!outcome.result && !exit.message.empty()) {
      outcome.message += " (" + exit.message + ")";
    }
  }
  outcome.image_id = exit.image_id;
  return outcome;
}

nlohmann::json AgentReportOf(const RunnerExit& exit) {
  std::string_view ended_as = exit.ended_as ? RunnerEndName(*exit.ended_as) : "";
  nlohmann::json report = {{"exit_code", exit.exit_code.value_or(-1)},
                           {"ended_as", ended_as},
                           {"message", exit.message},
                           {"image_id", exit.image_id}};
  // Only when set: a berthd of the version before it reads the rest of the report as before.
  if (exit.stop_requested) report["stop_requested"] = true;
  return report;
}

RunnerExit RunnerExitFromAgentReport(const nlohmann::json& report) {
  constexpr size_t kMaxText = 4096;
  auto text = [&](const char* key) {
    auto it = report.find(key);
    std::string value = it != report.end() && it->is_string() ? it->get<std::string>() : "";
    return value.substr(0, kMaxText);
  };
  RunnerExit exit;
  auto code = report.find("exit_code");
  if (code != report.end() && code->is_number_integer() && *code >= 0 && *code <= 255)
    exit.exit_code = code->get<int>();
  exit.ended_as = RunnerEndNamed(text("ended_as"));
  exit.message = text("message");
  auto stop = report.find("stop_requested");
  exit.stop_requested = stop != report.end() && stop->is_boolean() && stop->get<bool>();
  exit.image_id = text("image_id");
  return exit;
}

}  // namespace berth::launch
