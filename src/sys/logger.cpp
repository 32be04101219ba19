// The line format; spdlog only writes it.
#include "sys/logger.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/time_format.h"
#include "sys/files.h"

namespace berth::sys {
namespace {

// A sink onto a file descriptor: one write(2) per line, so lines of several processes (or a
// crash right after) are never torn.
class FdSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FdSink(int fd) : fd_(fd) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string line(msg.payload.data(), msg.payload.size());
    line.push_back('\n');
    (void)WriteAll(fd_, line);  // a log nobody can write to is not a reason to stop berthd
  }
  void flush_() override {}

 private:
  int fd_;
};

// A text value is quoted when it has a space, a quote or an equals sign, or is empty.
std::string TextValue(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \"=\n") == std::string::npos) return value;
  return nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Logger::Logger(Format format, int verbosity, int fd)
    : format_(format),
      verbosity_(verbosity),
      logger_(std::make_shared<spdlog::logger>("berthd", std::make_shared<FdSink>(fd))) {
  logger_->set_pattern("%v");
  logger_->set_level(spdlog::level::trace);
}

Logger::~Logger() = default;

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
  logger_->info("{}", line);
}

}  // namespace berth::sys
