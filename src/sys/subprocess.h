// Child processes: start one with an exact argv, environment, folder and output, signal its
// process group, wait for it. The runner drives tofu with it; the test environment starts
// etcd, kube-apiserver and PostgreSQL with it.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::sys {

struct SpawnOptions {
  std::vector<std::string> argv;                // argv[0] is a path; PATH is not searched
  std::optional<std::vector<std::string>> env;  // "NAME=value"; nullopt inherits ours
  std::string working_dir;                      // empty: ours
  std::string output_path;                      // stdout and stderr appended here; empty: ours
  std::string stdout_path;        // stdout alone, truncated into this file (stderr as above)
  bool pipe_output = false;       // stdout and stderr to a pipe: OutputFd()
  bool new_process_group = true;  // so that a signal reaches its children too
  // A session of its own as well (setsid): no controlling terminal, so that nothing it runs can
  // open /dev/tty or push keystrokes (TIOCSTI) into the shell that started us.
  bool new_session = false;
  bool die_with_parent = true;      // PR_SET_PDEATHSIG: no orphan outlives a crash
  std::optional<uid_t> run_as_uid;  // drop to this user (and its gid) first
  std::optional<gid_t> run_as_gid;
  std::vector<std::pair<int, rlim_t>> limits;  // setrlimit(resource, soft = hard = value)
  // Control groups the child joins before anything else (their cgroup.procs files): its every
  // descendant is then in them from its first instruction.
  std::vector<std::string> join_cgroups;
  // Descriptors of ours the program inherits at the same numbers (all others are closed).
  std::vector<int> inherited_fds;
  // SIGTERM and SIGINT ignored and blocked from the start (they are otherwise at their
  // defaults): for a wrapper (the sandbox, the run's network) that must outlive a stop signal
  // that its program handles. Blocked as well, so that a wrapper that handles them itself (pasta
  // ends at SIGTERM) never sees them either; the program reads them from a signalfd, for which
  // a blocked signal stays pending even while ignored.
  bool ignore_stop_signals = false;
};

class Subprocess {
 public:
  static Result<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // A child still running is killed (SIGKILL to its group) and reaped.
  ~Subprocess();

  pid_t Pid() const { return pid_; }
  int OutputFd() const { return output_fd_; }  // -1 unless pipe_output

  // Sends sig to the child's process group (or the child alone if it has none of its own).
  void Signal(int sig) const;
  // Blocks until the child ends. Exit status, or 128 + signal number when killed by a signal.
  int Wait();
  // The exit status if the child has ended, without blocking.
  std::optional<int> TryWait();
  bool Running() { return !TryWait().has_value(); }
  // Lets the child go on alone: this object forgets it (no kill, no wait), and whoever adopts it
  // watches it by its pid.
  void Detach();

 private:
  Subprocess(pid_t pid, int output_fd, bool own_group)
      : pid_(pid), output_fd_(output_fd), own_group_(own_group) {}
  void Release();

  pid_t pid_ = -1;
  int output_fd_ = -1;
  bool own_group_ = false;
  std::optional<int> status_;
};

// Runs argv to the end, returning its combined output and exit status.
struct Completed {
  int exit_code = 0;
  std::string output;
};
Result<Completed> RunToCompletion(SpawnOptions options);

}  // namespace berth::sys
