// The local runners' sandbox: bubblewrap (Debian's `bubblewrap`, the sandbox behind Flatpak)
// runs each runner in its own mount, PID, IPC and UTS namespaces, where only the run's own
// folders (read-write), the system's read-only folders, the programs and provider mirrors it is
// given (read-only) exist; berthd's data folder, database, admin token and other runs' folders
// are not there at all. A seccomp filter refuses the calls no run needs. When berthd is root the
// runner drops to a dedicated user inside; otherwise a user namespace maps berthd's user.
// docs/security.md says why bubblewrap and not the kernel's interfaces directly.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
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
};

class Sandbox {
 public:
  // Whether bubblewrap can make a sandbox here, tried once with a real one; the error says what
  // is missing and what to enable. run_as_uid: the user runs drop to when berthd is root.
  static Result<Sandbox> Probe(uid_t run_as_uid);

  // The argv that runs command inside, with the seccomp program at seccomp_fd (DangerousCalls).
  std::vector<std::string> Wrap(const SandboxMounts& mounts,
                                const std::vector<std::string>& command, int seccomp_fd) const;
  // The user that owns a run's writable folders: the dedicated one when berthd is root.
  std::optional<uid_t> RunUid() const { return privileged_ ? std::optional(uid_) : std::nullopt; }

 private:
  Sandbox(bool privileged, uid_t uid) : privileged_(privileged), uid_(uid) {}
  bool privileged_;
  uid_t uid_;
};

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
