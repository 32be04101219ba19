// Where the run's log lines go, as the Kubernetes logging flags ask: "[step] line" or one JSON
// object per line; one stream (stdout) or, with split streams, errors to stderr and info to
// stdout, where info may be held up to a buffer size and is written at least every
// --log-flush-frequency. Every line also goes to the tee (the gateway's log), in order.
#pragma once

#include <condition_variable>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "core/clock.h"
#include "core/duration.h"
#include "core/mutex.h"
#include "runner/verbosity.h"

namespace berth::runner {

struct LogSinkOptions {
  bool json = false;
  bool split_stream = false;
  size_t info_buffer_bytes = 0;  // split streams only; 0: every info line is written at once
  Duration flush_frequency = std::chrono::seconds(5);
  Verbosity verbosity;
};

class LogSink {
 public:
  LogSink(int out_fd, int err_fd, Clock& clock, LogSinkOptions options = {});
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // text must already be masked.
  void Line(std::string_view step, std::string_view text) EXCLUDES(mutex_);
  void Error(std::string_view step, std::string_view text) EXCLUDES(mutex_);
  // Whether a verbose line of this level from this step is wanted (-v, --vmodule).
  bool V(std::string_view step, int level) const { return options_.verbosity.Enabled(step, level); }
  // Writes the info held back, now.
  void Flush() EXCLUDES(mutex_);
  // Writes the info held back if --log-flush-frequency has passed since it was last written.
  void FlushIfDue() EXCLUDES(mutex_);
  // A thread that calls FlushIfDue until the sink is destroyed (only where info is held).
  void StartFlusher();
  // Every line also goes here, formatted, without its newline (the gateway's log).
  void Tee(std::function<void(std::string_view)> tee) { tee_ = std::move(tee); }

 private:
  std::string Format(std::string_view step, std::string_view text, bool error) const;
  void WriteHeld() REQUIRES(mutex_);

  const int out_fd_, err_fd_;
  Clock& clock_;
  const LogSinkOptions options_;
  std::function<void(std::string_view)> tee_;
  Mutex mutex_;
  std::string held_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point last_flush_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::condition_variable_any wake_;
  std::thread flusher_;
};

}  // namespace berth::runner
