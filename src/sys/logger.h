// berthd's own log: one line per event, as text ("2026-12-01T06:00:00.123Z INFO request
// method=GET route=/orgs/{org}/deployments/{id} status=200") or as one JSON object per line
// (--log-format=json), with -v for the verbose lines: made here so that JSON is always well
// formed, and written whole with one write(2), one line at a time.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mutex.h"

namespace berth::sys {

using LogFields = std::vector<std::pair<std::string, std::string>>;

class Logger {
 public:
  enum class Format { kText, kJson };

  // Writes to fd (stderr by default).
  explicit Logger(Format format = Format::kText, int verbosity = 0, int fd = 2);
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void Info(std::string_view event, const LogFields& fields = {}) { Write("INFO", event, fields); }
  void Warn(std::string_view event, const LogFields& fields = {}) { Write("WARN", event, fields); }
  void Error(std::string_view event, const LogFields& fields = {}) {
    Write("ERROR", event, fields);
  }
  // A line for -v=level and above.
  void V(int level, std::string_view event, const LogFields& fields = {}) {
    if (level <= verbosity_) Write("DEBUG", event, fields);
  }

  // "text" or "json"; false for anything else.
  static bool ParseFormat(std::string_view name, Format* format);

 private:
  void Write(std::string_view level, std::string_view event, const LogFields& fields);

  const Format format_;
  const int verbosity_;
  const int fd_;
  Mutex mutex_;
};

}  // namespace berth::sys
