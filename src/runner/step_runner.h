// Runs one TF command as a named step: streams its masked output line by line to the log with
// the step's name, keeps a bounded tail for the result, forwards a stop request as an
// interrupt and kills the command if it has not stopped after the stop timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/duration.h"
#include "core/masker.h"
#include "runner/log_sink.h"

namespace berth::runner {

struct StepOutcome {
  int exit_code = 0;
  std::string tail;         // masked end of the combined output
  std::string stdout_data;  // with capture_stdout: stdout, not logged
  bool cancelled = false;   // a stop signal arrived
  bool timed_out = false;   // the run's deadline passed
  bool start_failed = false;
  double seconds = 0;
};

class StepRunner {
 public:
  static constexpr size_t kTailBytes = size_t{16} * 1024;

  // signal_fd: a signalfd that becomes readable when the runner is asked to stop (-1: none).
  StepRunner(const Masker& masker, std::vector<std::string> environment, std::string workdir,
             LogSink& log, int signal_fd, Duration stop_timeout,
             std::optional<std::chrono::steady_clock::time_point> deadline);

  // capture_stdout: stdout is kept in StepOutcome::stdout_data (JSON a step reads, such as
  // `show -json`, which may hold sensitive values) and only stderr is logged.
  StepOutcome Run(const std::string& step, const std::vector<std::string>& argv,
                  bool capture_stdout = false);

  // True once a stop signal or the deadline has been seen: later steps must not start.
  bool Stopping() const { return cancelled_ || timed_out_; }
  bool Cancelled() const { return cancelled_; }
  bool TimedOut() const { return timed_out_; }

  // Writes a line of the runner's own to the log, masked, under the step's name.
  void Log(const std::string& step, const std::string& line);

 private:
  const Masker& masker_;
  std::vector<std::string> environment_;
  std::string workdir_;
  LogSink& log_;
  int signal_fd_;
  Duration stop_timeout_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool cancelled_ = false;
  bool timed_out_ = false;
};

}  // namespace berth::runner
