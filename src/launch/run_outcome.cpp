#include "launch/run_outcome.h"

#include <fmt/format.h>

namespace berth::launch {

RunOutcome OutcomeFromResult(std::optional<int> exit_code, std::string_view result_text) {
  using nlohmann::json;
  RunOutcome outcome;
  outcome.exit_code = exit_code.value_or(-1);
  json result = json::parse(result_text, nullptr, false);
  if (result.is_object() && result.contains("error")) {
    outcome.result = result;
    const json& error = result["error"];
    if (error.is_null()) {
      outcome.succeeded = exit_code.value_or(0) == 0;
    } else if (error.is_object()) {
      auto text = [&](const char* key, std::string fallback) {
        auto it = error.find(key);
        return it != error.end() && it->is_string() ? it->get<std::string>() : fallback;
      };
      outcome.error_kind = text("kind", std::string(kRunnerFailed));
      outcome.message = text("message", "");
    }
  }
  if (!outcome.succeeded && outcome.error_kind.empty()) {
    outcome.error_kind = kRunnerFailed;
    outcome.message = exit_code ? fmt::format("the runner exited {} without a result", *exit_code)
                                : std::string("the runner ended without a result");
  }
  return outcome;
}

}  // namespace berth::launch
