// One poll loop over the child's output and the stop signal.
#include "runner/step_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::runner {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the last max bytes of what it is given.
class Tail {
 public:
  explicit Tail(size_t max) : max_(max) {}
  void Append(std::string_view text) {
    data_.append(text);
    if (data_.size() > 2 * max_) data_.erase(0, data_.size() - max_);
  }
  std::string Take() const {
    return data_.size() > max_ ? data_.substr(data_.size() - max_) : data_;
  }

 private:
  size_t max_;
  std::string data_;
};

// A partial line longer than this is logged as it is, so that one endless line cannot grow
// the runner's memory.
constexpr size_t kMaxLine = size_t{64} * 1024;

}  // namespace

StepRunner::StepRunner(const Masker& masker, std::vector<std::string> environment,
                       std::string workdir, LogSink& log, int signal_fd, Duration stop_timeout,
                       std::optional<Clock::time_point> deadline)
    : masker_(masker),
      environment_(std::move(environment)),
      workdir_(std::move(workdir)),
      log_(log),
      signal_fd_(signal_fd),
      stop_timeout_(stop_timeout),
      deadline_(deadline) {}

void StepRunner::Log(const std::string& step, const std::string& line) {
  log_.Line(step, masker_.Mask(line));
}

StepOutcome StepRunner::Run(const std::string& step, const std::vector<std::string>& argv,
                            bool capture_stdout) {
  StepOutcome outcome;
  auto started = Clock::now();
  // A stop that arrived between steps: do not start this one.
  if (signal_fd_ >= 0) {
    pollfd pending_signal{signal_fd_, POLLIN, 0};
    if (poll(&pending_signal, 1, 0) > 0) {
      signalfd_siginfo info{};
      if (read(signal_fd_, &info, sizeof info) > 0) cancelled_ = true;
    }
  }
  if (deadline_ && Clock::now() >= *deadline_) timed_out_ = true;
  if (Stopping()) {
    outcome.exit_code = 130;
    outcome.cancelled = cancelled_;
    outcome.timed_out = timed_out_;
    Log(step, "not started: the run is stopping");
    return outcome;
  }
  sys::SpawnOptions options;
  options.argv = argv;
  options.env = environment_;
  options.working_dir = workdir_;
  options.pipe_output = true;
  // tofu's providers are its children: a runner killed outright must not leave them behind.
  options.die_with_parent = true;
  std::string stdout_file;
  if (capture_stdout) {
    stdout_file = workdir_ + "/.berth-" + step + ".out";
    options.stdout_path = stdout_file;
  }
  if (log_.V(step, 2)) {
    std::string command = "running:";
    for (const std::string& arg : argv) command += " " + arg;
    Log(step, command);
  }
  auto child = sys::Subprocess::Spawn(options);
  if (!child) {
    outcome.exit_code = 127;
    outcome.start_failed = true;
    outcome.tail = masker_.Mask(child.error().ToString());
    Log(step, outcome.tail);
    return outcome;
  }

  Tail tail(kTailBytes);
  std::string pending;
  auto emit_line = [&](std::string_view line) {
    std::string masked = masker_.Mask(line);
    log_.Line(step, masked);
    tail.Append(masked);
    tail.Append("\n");
  };
  std::optional<Clock::time_point> kill_at;
  auto request_stop = [&]() {
    if (kill_at) return;
    child->Signal(SIGINT);  // tofu stops cleanly on an interrupt and releases its lock
    kill_at = Clock::now() + stop_timeout_;
  };

  char buffer[65536];
  bool open = true;
  while (open) {
    auto now = Clock::now();
    if (deadline_ && now >= *deadline_ && !timed_out_) {
      timed_out_ = true;
      Log(step, "timeout reached: interrupting " + argv[0]);
      request_stop();
    }
    if (kill_at && now >= *kill_at) {
      Log(step, "did not stop within the stop timeout: killing it");
      child->Signal(SIGKILL);
      kill_at = Clock::time_point::max();
    }
    int wait_ms = -1;
    auto until = [&](Clock::time_point t) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      wait_ms = wait_ms < 0 ? static_cast<int>(ms) : std::min(wait_ms, static_cast<int>(ms));
    };
    if (deadline_ && !timed_out_) until(*deadline_);
    if (kill_at && *kill_at != Clock::time_point::max()) until(*kill_at);

    pollfd fds[2] = {{child->OutputFd(), POLLIN, 0}, {signal_fd_, POLLIN, 0}};
    int n = poll(fds, signal_fd_ >= 0 ? 2 : 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (signal_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo info{};
      if (read(signal_fd_, &info, sizeof info) > 0) {
        cancelled_ = true;
        Log(step, "stop requested (signal " + std::to_string(info.ssi_signo) + "): interrupting " +
                      argv[0]);
        request_stop();
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = read(child->OutputFd(), buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        open = false;
        break;
      }
      pending.append(buffer, static_cast<size_t>(got));
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        emit_line(std::string_view(pending).substr(start, nl - start));
      }
      pending.erase(0, start);
      if (pending.size() > kMaxLine) {
        // A line this long is written in parts, never cutting a secret in two (each half
        // would pass the masker).
        size_t cut = masker_.SafeCut(pending);
        if (cut == 0) cut = pending.size();
        emit_line(std::string_view(pending).substr(0, cut));
        pending.erase(0, cut);
      }
    }
  }
  if (!pending.empty()) emit_line(pending);
  outcome.exit_code = child->Wait();
  outcome.cancelled = cancelled_;
  outcome.timed_out = timed_out_;
  outcome.tail = tail.Take();
  if (capture_stdout) {
    auto data = sys::ReadFile(stdout_file);
    if (data) outcome.stdout_data = std::move(*data);
    unlink(stdout_file.c_str());
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return outcome;
}

}  // namespace berth::runner
