// The line format, and one write(2) per line.
#include "sys/logger.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/time_format.h"
#include "sys/files.h"

namespace berth::sys {
namespace {

// A text value is quoted when it has a space, a quote or an equals sign, or is empty.
std::string TextValue(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \"=\n") == std::string::npos) return value;
  return nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Logger::Logger(Format format, int verbosity, int fd)
    : format_(format), verbosity_(verbosity), fd_(fd) {}

bool Logger::ParseFormat(std::string_view name, Format* format) {
  if (name == "text")
    *format = Format::kText;
  else if (name == "json")
    *format = Format::kJson;
  else
    return false;
  return true;
}

void Logger::Write(std::string_view level, std::string_view event, const LogFields& fields) {
  std::string ts = FormatRfc3339(std::chrono::system_clock::now(), 3);
  std::string line;
  if (format_ == Format::kJson) {
    nlohmann::json doc = {{"ts", ts}, {"level", level}, {"event", event}};
    for (const auto& [key, value] : fields) doc[key] = value;
    line = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = ts + " " + std::string(level) + " " + std::string(event);
    for (const auto& [key, value] : fields) line += " " + key + "=" + TextValue(value);
  }
  line.push_back('\n');
  // One write per line, one writer at a time: lines of several threads (or a crash right
  // after) are never torn. A log nobody can write to is not a reason to stop.
  MutexLock lock(mutex_);
  (void)WriteAll(fd_, line);
}

}  // namespace berth::sys
