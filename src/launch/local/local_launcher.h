// The local launcher, berth's embedded default: each run is a `runner` child process in its
// own folder (work folder, home, tmp, token file, result, log), in a sandbox (sandbox.h) that
// shows it only that folder's run parts, with a clean environment (only what the run is given),
// resource limits and its own process group. At most max_parallel run at
// once, and at most a runner's own max_parallel of its runs; the others wait their turn in
// order. A runner's work_dir holds its runs' folders instead of runs_dir. Cancel is SIGTERM to the
// group (the runner stops TF cleanly and writes its result), SIGKILL after stop_timeout. A run
// survives berthd: on restart it is re-attached by its pid file, or ended from its result file, or
// RunnerLost.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "launch/launcher.h"
#include "launch/local/provider_harvest.h"
#include "launch/local/run_firewall.h"
#include "launch/local/run_limits.h"
#include "launch/local/sandbox.h"
#include "launch/local/user_mode_network.h"
#include "sys/exit_waiter.h"
#include "sys/stream_relay.h"
#include "sys/subprocess.h"

namespace berth::launch {

struct LocalLauncherOptions {
  std::filesystem::path runner_binary;
  std::filesystem::path runs_dir;  // one folder per run
  int max_parallel = 4;
  // NAME=VALUE entries every run gets on top of its own (PATH; TF_CLI_CONFIG_FILE for mirrors).
  std::vector<std::string> environment;
  std::chrono::seconds stop_timeout{60};
  rlim_t max_open_files = 4096;
  rlim_t max_file_bytes = rlim_t{8} << 30;  // no single file beyond 8 GiB
  rlim_t max_processes = 1024;              // of the run's user: a fork bomb stops here
  // Files and folders a run with limits.disk may hold: past it, it is stopped as past its disk.
  int64_t max_folder_entries = 1'000'000;
  // Every run executes in it. Without one, runs are refused with `refusal`, unless insecure
  // (--insecure-local-runners) lets them run as berthd's user, seeing all it sees.
  std::optional<Sandbox> sandbox;
  std::string refusal;
  bool insecure = false;
  // Where runs get control groups (run_limits.h); without, a run whose runner sets a limit
  // that needs one is refused with cgroups_refusal.
  std::optional<CgroupHost> cgroups;
  std::string cgroups_refusal;
  // What runs with network: full cannot reach (run_firewall.h), when berthd could install it
  // (root, iptables); a runner's network_allow opens it for its runs.
  std::shared_ptr<const RunFirewall> firewall;
  // The same for a berthd that is not root (user_mode_network.h): each sandboxed run with
  // network: full gets a network of its own, held by its routes, opened by network_allow.
  std::shared_ptr<const UserModeNetwork> user_mode_network;
  // Where each runner's shared provider cache is (a folder per org and runner), which its
  // sandboxed runs borrow providers from and berthd adds the ones they fetch to
  // (provider_harvest.h); empty: none, each run fetches its own.
  std::filesystem::path shared_providers;
  HarvestLimits harvest_limits;
  std::function<void(const HarvestCounts&)> on_harvest;  // what each harvest took; may be empty
};

class LocalLauncher final : public Launcher {
 public:
  LocalLauncher(LocalLauncherOptions options, RunObserver& observer);
  // Runs go on: a new launcher on the same runs_dir re-attaches them (Recover).
  ~LocalLauncher() override;
  LocalLauncher(const LocalLauncher&) = delete;
  LocalLauncher& operator=(const LocalLauncher&) = delete;

  Result<void> Launch(const LaunchRequest& request) override;
  Result<void> Cancel(const std::string& run_id) override;
  Result<void> Recover(const std::vector<LaunchRequest>& adopt, const RunIsHeld& held) override;
  bool SharedAcrossReplicas() const override { return false; }
  // The folders of ended runs, beyond the newest keep, in every folder runs were put in.
  void PruneEnded(const RunIsHeld& held, size_t keep) override EXCLUDES(mutex_);

  // Refuses (naming the path and the mount) a secret of berthd's that every sandboxed run
  // would see: under a system folder, a bound entry of /etc, a folder on the runs' PATH, the
  // TF CLI configuration and its mirrors, or the runner binary.
  Result<void> KeepsOutOfRuns(const std::vector<std::filesystem::path>& secrets) const;

  int Running() const EXCLUDES(mutex_);
  int Waiting() const EXCLUDES(mutex_);

 private:
  struct Run {
    LaunchRequest request;
    std::filesystem::path dir;
    std::optional<sys::Subprocess> child;  // started by this launcher
    pid_t adopted_pid = -1;                // re-attached after a restart
    bool cancelling = false;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    // The user it runs as when berthd is root (one of the sandbox's RunUids, its own while it
    // runs); none otherwise.
    std::optional<uid_t> uid;
    RunLimits limits;
    std::optional<RunCgroup> cgroup;
    std::string limit_hit;  // which limit stopped it, as the outcome says
    std::chrono::steady_clock::time_point next_limit_check{};
    std::unique_ptr<sys::StreamRelay> relay;  // its only way to berthd, when its network is cut
    NetworkAllowance opened;                  // what the firewall lets its user reach
  };

  // The run's folder: under its runner's work_dir, else runs_dir.
  std::filesystem::path RunDir(const LaunchRequest& request) const;
  // Whether the launcher and the request's runner both have room for one more run (and, when
  // runs drop to users of their own, a user no run has).
  bool HasRoom(const LaunchRequest& request) const REQUIRES(mutex_);
  // A user of the sandbox's no running run has; none when runs do not drop to one, or all are
  // taken.
  std::optional<uid_t> FreeRunUid() const REQUIRES(mutex_);
  // The run folder's user, for a run found again after a restart: the owner of its work folder.
  std::optional<uid_t> RunUidOf(const std::filesystem::path& dir) const;
  Result<void> Start(Run& run) REQUIRES(mutex_);
  // The relay of a run whose network is cut: relay/berthd.sock in its folder, to berthd's URL,
  // and the /etc/hosts that points berthd's host name at the runner's end of it.
  Result<void> StartRelay(Run& run) const;
  // The run's /etc/hosts (its folder's `hosts`), written for every run in a network of its own:
  // localhost, and berthd's host name at 127.0.0.1, where the run reaches berthd; what sets it
  // (network) is named when berthd's URL names an address that cannot be pointed there.
  Result<void> PointBerthdAtLoopback(const Run& run, const std::string& network) const;
  // Whether the run has a user-mode network of its own (network: full, a berthd not root).
  bool InUserModeNetwork(const Run& run) const;
  // What its runner's network_allow opens, for its user, from before its first process; and
  // closed again once it has ended (or could not start).
  Result<void> OpenNetwork(Run& run) const;
  void CloseNetwork(Run& run) const;
  // Whether an approved apply got its plan run's work folder, to continue without init.
  bool TakePlanRunWork(const Run& run) const;
  // The run's folder made for it: owned by the sandbox's user, the token readable by it only.
  Result<void> MakeRunFolder(const Run& run) const;
  // The run's runner's shared provider cache (made when the run starts); empty when there is
  // none.
  std::filesystem::path SharedProvidersOf(const LaunchRequest& request) const;
  // What the run's sandbox shows it: its folder's run parts, its module and inputs, and
  // environment_mounts_, read-only.
  SandboxMounts MountsOf(const Run& run, const RunnerInvocation& invocation) const;
  void StartWaiting() REQUIRES(mutex_);
  // Stops a run past its CPU time or disk limit (memory and processes are the kernel's).
  void CheckLimits(Run& run, std::chrono::steady_clock::time_point now) REQUIRES(mutex_);
  // Kills what is left in group and removes it, or keeps it to try again once its processes
  // are gone (RemoveLeftoverCgroups).
  void DropCgroup(const RunCgroup& group) REQUIRES(mutex_);
  void RemoveLeftoverCgroups() REQUIRES(mutex_);
  // How it ended, saying which limit ended it; and its control group gone.
  RunnerExit FinishRun(Run& run, std::optional<int> exit_code) REQUIRES(mutex_);
  void Loop();
  // How the run ended: its exit status (if known) and what was read of its result file
  // (ReadRunResult); a refused file is said as an event too.
  RunnerExit Finish(const std::string& run_id, const std::filesystem::path& dir,
                    std::optional<int> exit_code, const Result<std::string>& result)
      REQUIRES(mutex_);

  const LocalLauncherOptions options_;
  // Where run folders were put: runs_dir, and the work_dir of any runner seen.
  std::set<std::filesystem::path> roots_ GUARDED_BY(mutex_);
  const std::vector<std::filesystem::path> environment_mounts_;  // read-only in every sandbox
  RunObserver& observer_;
  mutable Mutex mutex_;
  sys::ExitWaiter exits_;  // the runs' exits, and wakes from other threads
  std::map<std::string, Run> running_ GUARDED_BY(mutex_);
  std::deque<LaunchRequest> waiting_ GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, RunnerExit>> ended_ GUARDED_BY(mutex_);  // to report
  std::vector<std::pair<std::string, LaunchEvent>> told_ GUARDED_BY(mutex_);  // before them
  std::vector<RunCgroup> leftover_cgroups_ GUARDED_BY(mutex_);                // removed once empty
  bool stopping_ GUARDED_BY(mutex_) = false;
  ProviderHarvester harvester_;  // ended runs' plugin caches into their runners' shared caches
  std::thread thread_;
};

}  // namespace berth::launch
