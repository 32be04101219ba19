// The local runners' sandbox: bubblewrap (Debian's `bubblewrap`, the sandbox behind Flatpak)
// runs each runner in its own mount, PID, IPC and UTS namespaces, where only the run's own
// folders (read-write), the system's read-only folders, the programs and provider mirrors it is
// given (read-only) exist; berthd's data folder, database, admin token and other runs' folders
// are not there at all. A seccomp filter refuses the calls no run needs. When berthd is root the
// runner drops to a user of its own inside, one of a range with one user per concurrent run:
// the kernel counts a user's processes (RLIMIT_NPROC), so a fork bomb in one run stops at its
// own limit and leaves the other runs room. Otherwise a user namespace per run maps berthd's
// user, and the kernel counts each namespace's processes apart.
// docs/security.md says why bubblewrap and not the kernel's interfaces directly.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/local/run_users.h"
#include "sys/fd.h"

namespace berth::launch {

// What one run may see.
struct SandboxMounts {
  std::vector<std::filesystem::path> read_write;  // folders, at the same paths
  std::vector<std::filesystem::path> read_only;   // files or folders, at the same paths
  std::filesystem::path tmp;                      // mounted as the run's private /tmp
  std::filesystem::path working_dir;
  // A network namespace of its own, with loopback only; hosts, if set, is its /etc/hosts.
  bool own_network = false;
  std::filesystem::path hosts;
  // Its host name (a UTS namespace of its own): the run's id, which TF writes into the state
  // locks it takes ("Who": user@host), so that berthd knows a lock a dead run left.
  std::string hostname;
  // Its /etc/passwd and /etc/group, when it runs as a user the machine's files do not name.
  std::filesystem::path passwd;
  std::filesystem::path group;
};

class Sandbox {
 public:
  // Whether bubblewrap can make a sandbox here, tried once with a real one; the error says what
  // is missing and what to enable. When berthd is root, runs drop to the users of run_users
  // (run_users.h), held by this berthd from here on: nobody's on this machine and no other
  // berthd's (the error names one that is).
  static Result<Sandbox> Probe(const RunUserRange& run_users);

  // The argv that runs command inside as run_uid (when berthd is root: one of RunUids()), with
  // the seccomp program at seccomp_fd (DangerousCalls), its user allowed max_processes
  // processes (RLIMIT_NPROC). The limit is set inside, by prlimit: a user namespace counts its
  // processes against the limit its creator had, so one set on bwrap would be a limit all runs
  // of a berthd that is not root share.
  std::vector<std::string> Wrap(const SandboxMounts& mounts,
                                const std::vector<std::string>& command, int seccomp_fd,
                                uid_t run_uid, rlim_t max_processes) const;
  // The users runs drop to, one per concurrent run, when berthd is root; none otherwise.
  const std::vector<uid_t>& RunUids() const;

 private:
  explicit Sandbox(std::shared_ptr<const RunUserClaim> run_users)
      : run_users_(std::move(run_users)) {}
  bool Privileged() const { return run_users_ != nullptr; }
  std::shared_ptr<const RunUserClaim> run_users_;  // none when berthd is not root
};

// The /etc/passwd or /etc/group of a run that drops to uid: the machine's (given), with an
// entry for the run's user (and its group of the same id) whose home is home.
std::string WithRunUser(const std::string& machines_file, uid_t uid,
                        const std::filesystem::path& home, bool group);

// The seccomp program (classic BPF, for bwrap --seccomp) that fails with EPERM the calls that
// reach beyond a run: ptrace and cross-process memory, mount and namespaces, kexec, modules,
// bpf, keyrings, perf, userfaultfd, clock and swap changes, reboot. In an anonymous file.
Result<sys::Fd> DangerousCallsFilter();

// The mount through which every sandboxed run would see path (a system folder, an entry of
// /etc, or one of extra_mounts: what the launcher binds for every run), if any: berthd keeps
// its secrets out of all of them.
std::optional<std::filesystem::path> SeenByEveryRun(
    const std::filesystem::path& path, const std::vector<std::filesystem::path>& extra_mounts);

// Paths a TF CLI configuration file names (its provider mirrors), for binding read-only.
std::vector<std::filesystem::path> PathsInCliConfig(const std::string& text);

}  // namespace berth::launch
