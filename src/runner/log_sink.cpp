// Log line formatting.
#include "runner/log_sink.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/time_format.h"

namespace berth::runner {

void LogSink::Line(std::string_view step, std::string_view text) {
  if (json_) {
    std::string line = nlohmann::json{
        {"ts", FormatRfc3339(std::chrono::system_clock::now(), 3)},
        {"step", step},
        {"msg", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::fprintf(out_, "%s\n", line.c_str());
  } else {
    std::fprintf(out_, "[%.*s] %.*s\n", static_cast<int>(step.size()), step.data(),
                 static_cast<int>(text.size()), text.data());
  }
}

}  // namespace berth::runner
