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

nlohmann::json AgentReportOf(const RunOutcome& outcome) {
  const auto* end = std::get_if<RunnerEnd>(&outcome.failure);
  std::string_view ended_as = end && *end != RunnerEnd::kFailed ? RunnerEndName(*end) : "";
  return {{"exit_code", outcome.exit_code},
          {"ended_as", ended_as},
          {"message", outcome.message},
          {"image_id", outcome.image_id}};
}

RunOutcome OutcomeFromAgentReport(const nlohmann::json& report, std::string_view posted_result) {
  constexpr size_t kMaxText = 4096;
  auto text = [&](const char* key) {
    auto it = report.find(key);
    std::string value = it != report.end() && it->is_string() ? it->get<std::string>() : "";
    return value.substr(0, kMaxText);
  };
  auto code = report.find("exit_code");
  std::optional<int> exit_code;
  if (code != report.end() && code->is_number_integer() && *code >= 0 && *code <= 255)
    exit_code = code->get<int>();
  RunOutcome outcome;
  std::optional<RunnerEnd> end = RunnerEndNamed(text("ended_as"));
  if (end && *end != RunnerEnd::kFailed) {
    outcome = RunnerEnded(*end, text("message"));
    outcome.exit_code = exit_code.value_or(-1);
  } else {
    outcome = OutcomeFromResult(exit_code, posted_result);
  }
  outcome.image_id = text("image_id");
  return outcome;
}

}  // namespace berth::launch
