// Log line formatting.
#include "runner/log_sink.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

namespace berth::runner {
namespace {

// RFC 3339 with milliseconds, UTC.
std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms % 1000));
  return text;
}

}  // namespace

void LogSink::Line(std::string_view step, std::string_view text) {
  if (json_) {
    std::string line = nlohmann::json{{"ts", Timestamp()}, {"step", step}, {"msg", text}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::fprintf(out_, "%s\n", line.c_str());
  } else {
    std::fprintf(out_, "[%.*s] %.*s\n", static_cast<int>(step.size()), step.data(),
                 static_cast<int>(text.size()), text.data());
  }
}

}  // namespace berth::runner
