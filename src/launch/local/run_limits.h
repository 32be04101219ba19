// What one local run may use, from its runner's `limits`, and how berthd holds it to them.
// Memory, processes and CPU time are the kernel's to count and hold for the run's processes
// together: each run gets its own control group, which also finds every process of the run,
// those that left its process group included. On cgroup v1 (as root) that is a group in each
// controller its limits need (memory, pids, cpuacct); on cgroup v2 one group, under berthd's own
// group when that is delegated to it (systemd's Delegate=yes, or a container's own cgroup
// namespace): berthd moves itself into a leaf of it (v2 allows no processes in a group whose
// children have controllers) and makes the runs' groups beside. Disk is what the run's folder
// holds, measured by the launcher, with no single file beyond it (RLIMIT_FSIZE). A berthd that
// cannot make control groups refuses a run whose runner sets the limits that need them, saying
// why.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::launch {

struct RunLimits {
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> cpu_seconds;
  std::optional<int64_t> disk_bytes;
  std::optional<int64_t> processes;

  // The limit that needs a control group, as the runner names it ("limits.memory"); empty
  // when none does.
  std::string NeedingCgroup() const;
};

// A run's control group: one folder per controller.
class RunCgroup {
 public:
  // The cgroup.procs files a process writes "0" to, to join the group.
  std::vector<std::filesystem::path> ProcsFiles() const;
  // CPU time used by every process that was in it.
  std::optional<double> CpuSeconds() const;
  // How many times the kernel killed one of its processes for going over its memory.
  int64_t OomKills() const;
  // SIGKILL to every process in it.
  void KillAll() const;
  // Removes it; false while a process is still in it (try again later).
  bool Remove() const;

 private:
  friend class CgroupHost;
  // controller -> its folder; cgroup v2 has one folder for all, kUnified.
  std::map<std::string, std::filesystem::path> dirs_;
};

class CgroupHost {
 public:
  // Whether runs can have control groups here (cgroup v2 where /sys/fs/cgroup is unified, v1
  // otherwise), tried with a real one; the error says why not.
  static Result<CgroupHost> Probe();
  // cgroup v2 mounted at mount, berthd's own group (as /proc/self/cgroup's "0::" line names
  // it) delegated to it: berthd (self) moves into its leaf berthd/, memory and pids are enabled
  // for the group's children, and runs' groups are made under berth-runs/.
  static Result<CgroupHost> ProbeUnified(const std::filesystem::path& mount,
                                         const std::string& own_group, pid_t self);
  bool Unified() const;
  // The group named name (a run id) with limits set, in the controllers they need.
  Result<RunCgroup> Create(const std::string& name, const RunLimits& limits) const;
  // A group an earlier berthd made with limits (after a restart), whether or not it is still
  // there.
  RunCgroup Existing(const std::string& name, const RunLimits& limits) const;

 private:
  std::map<std::string, std::filesystem::path> parents_;  // controller -> berthd's runs folder
};

// What a folder holds on disk (allocated blocks), symbolic links not followed, and how many
// entries it took to count; the count stops past max_entries (a run's millions of empty files
// would otherwise make each check as long), with complete false.
struct FolderUsage {
  int64_t bytes = 0;
  int64_t entries = 0;
  bool complete = true;
};
FolderUsage DiskUsage(const std::filesystem::path& dir, int64_t max_entries);

}  // namespace berth::launch
