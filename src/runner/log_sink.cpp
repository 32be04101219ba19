// Log line formatting and the two streams.
#include "runner/log_sink.h"

#include <nlohmann/json.hpp>

#include "core/time_format.h"
#include "sys/files.h"

namespace berth::runner {

LogSink::LogSink(int out_fd, int err_fd, Clock& clock, LogSinkOptions options)
    : out_fd_(out_fd), err_fd_(err_fd), clock_(clock), options_(std::move(options)) {
  MutexLock lock(mutex_);
  last_flush_ = clock_.Now();
}

LogSink::~LogSink() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  Flush();
}

std::string LogSink::Format(std::string_view step, std::string_view text, bool error) const {
  std::string line;
  if (options_.json) {
    nlohmann::json doc{
        {"ts", FormatRfc3339(std::chrono::system_clock::now(), 3)}, {"step", step}, {"msg", text}};
    if (error) doc["err"] = true;
    line = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line.reserve(step.size() + text.size() + 3);
    line.append("[").append(step).append("] ").append(text);
  }
  return line;
}

void LogSink::Line(std::string_view step, std::string_view text) {
  std::string line = Format(step, text, false);
  if (tee_) tee_(line);
  line.push_back('\n');
  MutexLock lock(mutex_);
  if (options_.info_buffer_bytes == 0) {
    sys::WriteAll(out_fd_, line);
    return;
  }
  held_ += line;
  if (held_.size() >= options_.info_buffer_bytes) WriteHeld();
}

void LogSink::Error(std::string_view step, std::string_view text) {
  std::string line = Format(step, text, true);
  if (tee_) tee_(line);
  line.push_back('\n');
  MutexLock lock(mutex_);
  if (!options_.split_stream) {
    sys::WriteAll(out_fd_, line);
    return;
  }
  sys::WriteAll(err_fd_, line);
}

void LogSink::WriteHeld() {
  sys::WriteAll(out_fd_, held_);
  held_.clear();
  last_flush_ = clock_.Now();
}

void LogSink::Flush() {
  MutexLock lock(mutex_);
  WriteHeld();
}

void LogSink::FlushIfDue() {
  MutexLock lock(mutex_);
  if (clock_.Now() - last_flush_ >= options_.flush_frequency) WriteHeld();
}

void LogSink::StartFlusher() {
  if (options_.info_buffer_bytes == 0 || flusher_.joinable()) return;
  flusher_ = std::thread([this] {
    MutexLock lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(mutex_, options_.flush_frequency);
      if (clock_.Now() - last_flush_ >= options_.flush_frequency) WriteHeld();
    }
  });
}

}  // namespace berth::runner
