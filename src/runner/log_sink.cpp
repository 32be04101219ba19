// Log line formatting.
#include "runner/log_sink.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/time_format.h"

namespace berth::runner {

void LogSink::Line(std::string_view step, std::string_view text) {
  std::string line;
  if (json_) {
    line = nlohmann::json{
        {"ts", FormatRfc3339(std::chrono::system_clock::now(), 3)},
        {"step", step},
        {"msg",
         text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line.reserve(step.size() + text.size() + 3);
    line.append("[").append(step).append("] ").append(text);
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), out_);
  line.pop_back();
  if (tee_) tee_(line);
}

}  // namespace berth::runner
