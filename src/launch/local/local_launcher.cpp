#include "launch/local/local_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "core/decimal.h"
#include "core/http_url.h"
#include "launch/run_outcome.h"
#include "sys/fd.h"
#include "sys/files.h"

namespace berth::launch {
namespace {

// Whether this build runs under AddressSanitizer: GCC says so with a macro, clang with
// __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitized = true;
#else
constexpr bool kAddressSanitized = false;
#endif
#else
constexpr bool kAddressSanitized = false;
#endif

namespace fs = std::filesystem;

// A process that has not ended. A zombie has (its parent has yet to reap it): when berthd
// itself is that parent, reap it here.
bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  (void)waitpid(pid, nullptr, WNOHANG);  // ECHILD unless it is ours
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  auto stat = sys::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  auto close = stat->rfind(')');  // "PID (comm) STATE ...": comm may hold spaces
  return close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'Z';
}

// The pid file names the process and its run folder, so that a recycled pid is not mistaken for
// the runner: /proc/PID/cmdline must still mention the folder.
bool IsRunnerOf(pid_t pid, const fs::path& dir) {
  auto cmdline = sys::ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline && cmdline->find(dir.string()) != std::string::npos;
}

// The runner of a run folder: the process its pid file names, or, when berthd stopped between
// starting it and writing the pid, the process group leader whose command line names the
// folder. -1 when there is none.
pid_t RunnerPid(const fs::path& dir, const std::string& pid_text) {
  pid_t pid = ParseDecimal<pid_t>(pid_text).value_or(0);
  if (pid > 0) return Alive(pid) && IsRunnerOf(pid, dir) ? pid : -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    pid_t candidate = ParseDecimal<pid_t>(entry.path().filename().native()).value_or(0);
    if (candidate > 0 && getpgid(candidate) == candidate && IsRunnerOf(candidate, dir) &&
        Alive(candidate))
      return candidate;
  }
  return -1;
}

// Where the runner writes its result: in the one folder of the run's own that it may write
// besides its work folder, home and tmp.
constexpr const char* kResultFile = "out/result.json";
// The runner cuts its result to 4 KiB (--result-max-bytes); what the run leaves there is the
// module's as much as the runner's, so berthd reads no more than this of it.
constexpr size_t kMaxResultFileBytes = size_t{64} << 10;

// What the run left as its result: read beneath its folder, never through a link, a FIFO or a
// device (the module can replace the file), and bounded. NotFound when there is none.
Result<std::string> ReadRunResult(const fs::path& dir) {
  return sys::ReadFileBeneath(dir, kResultFile, kMaxResultFileBytes);
}

// The run's local runner settings; the defaults for a request of another runner type, which
// Launch refuses.
const LocalRunnerSettings& SettingsOf(const LaunchRequest& request) {
  static const LocalRunnerSettings kDefaults;
  const auto* local = std::get_if<LocalRunnerSettings>(&request.runner);
  return local != nullptr ? *local : kDefaults;
}

// A runner with `network: berthd_only`: its runs get a network namespace of their own and reach
// berthd only through relay/berthd.sock in their folder (sys/stream_relay.h, docs/security.md).
bool CutsNetwork(const LaunchRequest& request) { return SettingsOf(request).cuts_network; }
fs::path RelaySocket(const fs::path& dir) { return dir / "relay" / "berthd.sock"; }

// A sandboxed run's own plugin cache: in its private /tmp, a path every run has, so that an
// approved apply that continues in its plan run's work folder (whose .terraform links into
// that cache) finds it at the same path once it is moved along.
constexpr const char* kRunPluginCache = "/tmp/plugin-cache";
fs::path RunPluginCache(const fs::path& dir) { return dir / "tmp" / "plugin-cache"; }

// An org or runner id as one folder name; empty for one that cannot be (ids are DNS labels).
std::string FolderName(const std::string& id) {
  if (id.empty()) return "_";
  bool plain = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
  return plain && id.size() <= 253 ? id : "";
}

// The folders and files of berthd's environment every sandboxed run sees read-only: the
// program folders on PATH, and the TF CLI configuration with the provider mirrors it names.
// Read once: the environment is fixed for the launcher's life.
std::vector<fs::path> EnvironmentMounts(const std::vector<std::string>& environment) {
  std::vector<fs::path> mounts;
  auto add = [&](std::string_view path) {
    if (!path.empty() && fs::path(path).is_absolute()) mounts.emplace_back(path);
  };
  for (const std::string& entry : environment) {
    std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    std::string_view value = std::string_view(entry).substr(name.size() + 1);
    if (name == "PATH") {
      for (size_t start = 0; start <= value.size();) {
        size_t end = std::min(value.find(':', start), value.size());
        add(value.substr(start, end - start));
        start = end + 1;
      }
    } else if (name == "TF_CLI_CONFIG_FILE") {
      add(value);
      auto text = sys::ReadFile(std::string(value));
      for (const fs::path& mirror : PathsInCliConfig(text ? *text : "")) add(mirror.string());
    }
  }
  return mounts;
}

}  // namespace

LocalLauncher::LocalLauncher(LocalLauncherOptions options, RunObserver& observer)
    : options_(std::move(options)),
      environment_mounts_(options_.sandbox ? EnvironmentMounts(options_.environment)
                                           : std::vector<fs::path>{}),
      observer_(observer),
      harvester_(options_.harvest_limits, options_.on_harvest) {
  thread_ = std::thread([this] { Loop(); });
}

LocalLauncher::~LocalLauncher() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    for (auto& [id, run] : running_) {
      if (run.child) run.child->Detach();
    }
  }
  exits_.Wake();
  thread_.join();
  // The groups of ended runs whose processes were still leaving (each was sent SIGKILL): a
  // moment more for them, so that a stopping berthd leaves none behind.
  MutexLock lock(mutex_);
  for (int attempt = 0; attempt < 50 && !leftover_cgroups_.empty(); ++attempt) {
    RemoveLeftoverCgroups();
    if (!leftover_cgroups_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

fs::path LocalLauncher::RunDir(const LaunchRequest& request) const {
  const std::string& work_dir = SettingsOf(request).work_dir;
  return (work_dir.empty() ? options_.runs_dir : fs::path(work_dir)) / request.run_id;
}

bool LocalLauncher::HasRoom(const LaunchRequest& request) const {
  if (static_cast<int>(running_.size()) >= options_.max_parallel) return false;
  if (options_.sandbox && !options_.sandbox->RunUids().empty() && !FreeRunUid()) return false;
  int runner_max = SettingsOf(request).max_parallel.value_or(options_.max_parallel);
  int of_runner = 0;
  for (const auto& [id, run] : running_) of_runner += run.request.runner_id == request.runner_id;
  return of_runner < runner_max;
}

Result<void> LocalLauncher::Launch(const LaunchRequest& request) {
  if (!std::holds_alternative<LocalRunnerSettings>(request.runner))
    return MakeError(ErrorKind::kInvalidArgument,
                     "runner " + request.runner_id + " is not a local runner");
  MutexLock lock(mutex_);
  if (running_.contains(request.run_id)) return {};
  for (const auto& waiting : waiting_) {
    if (waiting.run_id == request.run_id) return {};
  }
  // Launched before (this launcher or an earlier one): never a second runner for a run.
  std::error_code ec;
  if (fs::exists(RunDir(request) / "pid", ec))
    return MakeError(ErrorKind::kAlreadyExists,
                     "run " + request.run_id + " was launched already; Recover adopts it");
  waiting_.push_back(request);
  StartWaiting();
  return {};
}

std::optional<uid_t> LocalLauncher::FreeRunUid() const {
  if (!options_.sandbox) return std::nullopt;
  for (uid_t uid : options_.sandbox->RunUids()) {
    if (std::none_of(running_.begin(), running_.end(),
                     [uid](const auto& entry) { return entry.second.uid == uid; }))
      return uid;
  }
  return std::nullopt;
}

std::optional<uid_t> LocalLauncher::RunUidOf(const fs::path& dir) const {
  struct stat st {};
  if (!options_.sandbox || lstat((dir / "work").c_str(), &st) != 0) return std::nullopt;
  const auto& uids = options_.sandbox->RunUids();
  if (std::find(uids.begin(), uids.end(), st.st_uid) == uids.end()) return std::nullopt;
  return st.st_uid;
}

void LocalLauncher::StartWaiting() {
  // In order, passing over the runs of a runner that is full: it holds up no other runner.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!HasRoom(*it)) {
      ++it;
      continue;
    }
    LaunchRequest request = std::move(*it);
    it = waiting_.erase(it);
    std::string run_id = request.run_id;
    Run& run = running_[run_id];
    run.dir = RunDir(request);
    roots_.insert(run.dir.parent_path());
    run.request = std::move(request);
    run.uid = FreeRunUid();
    if (auto started = Start(run); !started) {
      CloseNetwork(run);
      running_.erase(run_id);
      // Reported from the loop's thread, outside the lock.
      ended_.push_back({run_id, RunnerStopped(RunnerEnd::kFailed, "cannot start the runner: " +
                                                                      started.error().ToString())});
      exits_.Wake();
    }
  }
}

// The plan run's init left the providers and modules where it ran: the apply of exactly its
// plan continues there (the runner trusts nothing in it: runner/prepared_init.h). Where the
// folder is gone (pruned, kept by another machine, under another work_dir), the apply inits.
bool LocalLauncher::TakePlanRunWork(const Run& run) const {
  const LaunchRequest& request = run.request;
  if (request.plan_run_id.empty() || request.invocation.approved_plan_sha256.empty()) return false;
  std::error_code ec;
  fs::create_directories(run.dir / "tmp", ec);
  const fs::path plan_dir = run.dir.parent_path() / request.plan_run_id;
  if (ec || rename((plan_dir / "work").c_str(), (run.dir / "work").c_str()) != 0) return false;
  // The providers its init linked from its plugin cache go along (a rename moves a link as it
  // is, never what it points at); without them the apply's tofu finds none and fails.
  (void)rename(RunPluginCache(plan_dir).c_str(), RunPluginCache(run.dir).c_str());
  // The plan ran as another user than the apply may: what it left becomes the apply's (its
  // processes are gone with its PID namespace, so nothing changes the tree meanwhile).
  if (run.uid) {
    for (const fs::path& tree : {run.dir / "work", RunPluginCache(run.dir)}) {
      std::error_code exists;
      if (!fs::exists(tree, exists)) continue;
      if (auto given = sys::ChownTree(tree, *run.uid, *run.uid); !given) {
        IgnoreError(given, "the apply inits afresh instead");
        fs::remove_all(run.dir / "work", exists);
        return false;
      }
    }
  }
  return true;
}

fs::path LocalLauncher::SharedProvidersOf(const LaunchRequest& request) const {
  if (options_.shared_providers.empty() || !options_.sandbox) return {};
  const std::string org = FolderName(request.org_id);
  const std::string runner = FolderName(request.runner_id);
  if (org.empty() || runner.empty()) return {};
  return options_.shared_providers / org / runner;
}

Result<void> LocalLauncher::MakeRunFolder(const Run& run) const {
  const fs::path& dir = run.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::permissions(dir, fs::perms::owner_all, ec);
  const std::optional<uid_t>& owner = run.uid;
  for (const char* sub : {"work", "home", "tmp", "out"}) {
    fs::create_directories(dir / sub, ec);
    if (!ec && owner && lchown((dir / sub).c_str(), *owner, *owner) != 0)
      ec = std::error_code(errno, std::generic_category());
    if (ec)
      return MakeError(ErrorKind::kUnavailable, "cannot make the run folder: " + ec.message(),
                       dir / sub);
  }
  // Files only the run's user reads: its token, and its copy of berthd's kubeconfig (for
  // kubernetes state storage), which berthd's own may not let that user read.
  auto give = [&](const char* name, const std::string& content) -> Result<void> {
    if (auto written = sys::WriteFileAtomicUnsynced(dir / name, content); !written)
      return written.error();
    if (owner && chown((dir / name).c_str(), *owner, *owner) != 0)
      return MakeError(ErrorKind::kUnavailable, "cannot give the run its file", dir / name);
    return {};
  };
  if (auto given = give("token", run.request.token); !given) return given;
  // The run's user in the files programs look users up in (ssh and git refuse a user without
  // one), readable by the run.
  if (owner) {
    for (const char* name : {"passwd", "group"}) {
      auto machines = sys::ReadFile(fs::path("/etc") / name);
      std::string file = WithRunUser(machines ? *machines : "", *owner, dir / "home",
                                     std::string_view(name) == "group");
      if (auto written = sys::WriteFileAtomicUnsynced(dir / name, file); !written)
        return written.error();
      fs::permissions(dir / name,
                      fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read, ec);
    }
  }
  constexpr std::string_view kKubeconfig = "KUBE_CONFIG_PATH=";
  for (const std::string& entry : options_.environment) {
    if (!options_.sandbox || !entry.starts_with(kKubeconfig)) continue;
    auto text = sys::ReadFile(entry.substr(kKubeconfig.size()));
    if (!text) return text.error();
    if (auto given = give("kubeconfig", *text); !given) return given;
  }
  return {};
}

SandboxMounts LocalLauncher::MountsOf(const Run& run, const RunnerInvocation& invocation) const {
  const fs::path& dir = run.dir;
  SandboxMounts mounts{.read_write = {dir / "work", dir / "home", dir / "out"},
                       .read_only = {dir / "token", dir / "kubeconfig", options_.runner_binary},
                       .tmp = dir / "tmp",
                       .working_dir = dir / "work",
                       .hostname = run.request.run_id};
  if (run.uid) {
    mounts.passwd = dir / "passwd";
    mounts.group = dir / "group";
  }
  for (const std::string* path :
       {&invocation.module, &invocation.config, &invocation.bin, &invocation.providers}) {
    if (!path->empty() && fs::path(*path).is_absolute()) mounts.read_only.emplace_back(*path);
  }
  mounts.read_only.insert(mounts.read_only.end(), environment_mounts_.begin(),
                          environment_mounts_.end());
  if (fs::path shared = SharedProvidersOf(run.request); !shared.empty())
    mounts.read_only.push_back(std::move(shared));
  if (CutsNetwork(run.request)) {
    mounts.own_network = true;
    mounts.hosts = dir / "hosts";
    mounts.read_only.push_back(dir / "relay");  // a socket connects on a read-only mount
  }
  if (InUserModeNetwork(run)) mounts.hosts = dir / "hosts";
  return mounts;
}

Result<void> LocalLauncher::Start(Run& run) {
  const std::string& run_id = run.request.run_id;
  const fs::path& dir = run.dir;
  if (!options_.sandbox && !options_.insecure)
    return MakeError(ErrorKind::kFailedPrecondition, options_.refusal);
  const bool prepared = TakePlanRunWork(run);
  if (auto made = MakeRunFolder(run); !made) return made.error();

  RunnerInvocation invocation = run.request.invocation;
  invocation.prepared = prepared;
  if (CutsNetwork(run.request)) {
    if (!options_.sandbox)
      return MakeError(
          ErrorKind::kFailedPrecondition,
          "runner " + run.request.runner_id +
              " sets network: berthd_only, which needs the sandbox: " + options_.refusal);
    if (auto relayed = StartRelay(run); !relayed) return relayed.error();
    invocation.berthd_relay = RelaySocket(dir).string();
  }
  if (InUserModeNetwork(run)) {
    if (auto pointed = PointBerthdAtLoopback(run, "network: full"); !pointed)
      return pointed.error();
  }
  invocation.ns = "local";
  invocation.name = run_id;
  invocation.workdir = (dir / "work").string();
  invocation.result = (dir / kResultFile).string();
  sys::SpawnOptions spawn;
  spawn.argv = invocation.Args();
  spawn.argv.insert(spawn.argv.begin(), options_.runner_binary.string());
  // Only what the run is given: no berthd secrets, no stray credentials of the host.
  // In the sandbox the run's tmp folder is its /tmp (its own path is not there): a provider
  // makes its plugin socket in TMPDIR, and fails to start where that path does not exist.
  spawn.env = std::vector<std::string>{
      "HOME=" + (dir / "home").string(),
      "TMPDIR=" + (options_.sandbox ? std::string("/tmp") : (dir / "tmp").string()),
      "BERTH_TOKEN_FILE=" + (dir / "token").string()};
  // A plugin cache every run could write is one a run could poison for the others: a sandboxed
  // run has its own, and borrows from its runner's shared cache what its lock file pins.
  if (fs::path shared = SharedProvidersOf(run.request); !shared.empty()) {
    // Where it cannot be made, the run is lent nothing and fetches its own.
    std::error_code ec;
    fs::create_directories(shared, ec);
    spawn.env->push_back(std::string("TF_PLUGIN_CACHE_DIR=") + kRunPluginCache);
    spawn.env->push_back("BERTH_SHARED_PROVIDERS=" + shared.string());
  }
  for (const std::string& entry : options_.environment) {
    if (options_.sandbox && entry.starts_with("TF_PLUGIN_CACHE_DIR=")) continue;
    if (options_.sandbox && entry.starts_with("KUBE_CONFIG_PATH=")) {
      spawn.env->push_back("KUBE_CONFIG_PATH=" + (dir / "kubeconfig").string());
      continue;
    }
    spawn.env->push_back(entry);
  }
  // A sanitized build's runner cannot check its leaks in the sandbox (LeakSanitizer needs
  // ptrace, which the sandbox refuses); the runner's own tests check them outside.
  if (kAddressSanitized && options_.sandbox) spawn.env->push_back("LSAN_OPTIONS=detect_leaks=0");
  spawn.working_dir = dir.string();
  spawn.output_path = (dir / "runner.log").string();
  spawn.new_process_group = true;
  spawn.new_session = true;       // no terminal of berthd's (`berth up` in a shell) reaches the run
  spawn.die_with_parent = false;  // a berthd restart must not kill a running apply
  run.limits = SettingsOf(run.request).limits;
  rlim_t file_bytes = options_.max_file_bytes;
  if (run.limits.disk_bytes)
    file_bytes = std::min(file_bytes, static_cast<rlim_t>(*run.limits.disk_bytes));
  spawn.limits = {
      {RLIMIT_CORE, 0}, {RLIMIT_NOFILE, options_.max_open_files}, {RLIMIT_FSIZE, file_bytes}};
  // A sandboxed run's process limit is set inside its sandbox (Sandbox::Wrap says why).
  if (!options_.sandbox) spawn.limits.emplace_back(RLIMIT_NPROC, options_.max_processes);
  if (std::string needs = run.limits.NeedingCgroup(); !needs.empty()) {
    if (!options_.cgroups)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "runner " + run.request.runner_id + " sets " + needs +
                           ", which this berthd cannot enforce: " + options_.cgroups_refusal);
    auto group = options_.cgroups->Create(run_id, run.limits);
    if (!group) return group.error();
    for (const fs::path& procs : group->ProcsFiles()) spawn.join_cgroups.push_back(procs.string());
    run.cgroup = std::move(*group);
  }
  sys::Fd seccomp;
  if (options_.sandbox) {
    auto filter = DangerousCallsFilter();
    if (!filter) return filter.error();
    seccomp = std::move(*filter);
    spawn.argv = options_.sandbox->Wrap(MountsOf(run, invocation), spawn.argv, seccomp.Get(),
                                        run.uid.value_or(0), options_.max_processes);
    if (InUserModeNetwork(run))
      spawn.argv = options_.user_mode_network->Wrap(SettingsOf(run.request).allowance, spawn.argv);
    spawn.inherited_fds = {seccomp.Get()};
    // The sandbox's own processes outlive SIGTERM; the runner inside reads it and stops TF.
    spawn.ignore_stop_signals = true;
  }
  if (auto opened = OpenNetwork(run); !opened) return opened.error();
  // Recorded before it exists: a berthd that stops between the two finds a started run (and
  // looks for its process) rather than a run to start a second time. The mark is synced (after
  // a power loss it still says the run may have changed something); the pid need not be, no
  // process outlives one.
  if (auto marked = sys::WriteFileAtomic(dir / "pid", ""); !marked) return marked.error();
  auto child = sys::Subprocess::Spawn(spawn);
  if (!child) return child.error();
  if (auto written = sys::WriteFileAtomicUnsynced(dir / "pid", std::to_string(child->Pid()));
      !written) {
    child->Signal(SIGKILL);
    return written.error();
  }
  run.child.emplace(std::move(*child));
  exits_.Watch(run.child->Pid());
  return {};
}

Result<void> LocalLauncher::Cancel(const std::string& run_id) {
  {
    MutexLock lock(mutex_);
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (it->run_id != run_id) continue;
      waiting_.erase(it);
      ended_.push_back(
          {run_id, RunnerStopped(RunnerEnd::kCancelled, "cancelled before its runner started")});
      exits_.Wake();
      return {};
    }
    auto it = running_.find(run_id);
    if (it == running_.end() || it->second.cancelling) return {};
    Run& run = it->second;
    run.cancelling = true;
    run.kill_at = std::chrono::steady_clock::now() + options_.stop_timeout;
    if (run.child) {
      run.child->Signal(SIGTERM);
    } else if (Alive(run.adopted_pid)) {
      kill(-run.adopted_pid, SIGTERM);
    }
  }
  exits_.Wake();
  return {};
}

RunnerExit LocalLauncher::Finish(const std::string& run_id, const fs::path& dir,
                                 std::optional<int> exit_code, const Result<std::string>& result) {
  // A re-attached run's exit status is not ours to read: its result says how it ended.
  RunnerExit exit{.exit_code = exit_code, .written_result = result ? *result : std::string()};
  if (!result && result.error().kind != ErrorKind::kNotFound) {
    // The module may have replaced it: said whether or not the result it posted stands.
    exit.message = "its result file was refused: " + result.error().ToString();
    told_.emplace_back(
        run_id, LaunchEvent{.reason = std::string(kResultFileRefused), .message = exit.message});
  }
  std::error_code ec;
  fs::remove(dir / "token", ec);  // the token is not needed once the run is over
  return exit;
}

void LocalLauncher::CheckLimits(Run& run, std::chrono::steady_clock::time_point now) {
  if (run.cancelling || now < run.next_limit_check) return;
  if (!run.limits.cpu_seconds && !run.limits.disk_bytes) return;
  run.next_limit_check = now + std::chrono::milliseconds(500);
  std::chrono::seconds grace = options_.stop_timeout;
  if (run.limits.cpu_seconds && run.cgroup) {
    if (auto used = run.cgroup->CpuSeconds(); used && *used > double(*run.limits.cpu_seconds))
      run.limit_hit = "its processes used more than limits.cpu_seconds (" +
                      std::to_string(*run.limits.cpu_seconds) + " s of CPU time)";
  }
  if (run.limit_hit.empty() && run.limits.disk_bytes) {
    // Counted under the launcher's lock: the count is bounded, so a run's millions of empty
    // files cannot hold up every other run's start and end.
    const FolderUsage usage = DiskUsage(run.dir, options_.max_folder_entries);
    if (!usage.complete)
      run.limit_hit = "its folder held more than " + std::to_string(options_.max_folder_entries) +
                      " files and folders";
    else if (usage.bytes > *run.limits.disk_bytes)
      run.limit_hit = "its folder held more than limits.disk (" +
                      std::to_string(*run.limits.disk_bytes) + " bytes)";
    // Every second of grace is more written: the runner gets a short one to save its state.
    if (!run.limit_hit.empty()) grace = std::min(grace, std::chrono::seconds(10));
  }
  if (run.limit_hit.empty()) return;
  observer_.OnRunEvent(run.request.run_id,
                       {std::string(kLimitExceeded), "stopping the run: " + run.limit_hit});
  run.cancelling = true;
  run.kill_at = now + grace;
  if (run.child)
    run.child->Signal(SIGTERM);
  else
    kill(-run.adopted_pid, SIGTERM);
}

bool LocalLauncher::InUserModeNetwork(const Run& run) const {
  return options_.user_mode_network && options_.sandbox && !run.uid && !CutsNetwork(run.request);
}

Result<void> LocalLauncher::PointBerthdAtLoopback(const Run& run,
                                                  const std::string& network) const {
  std::string hosts = "127.0.0.1 localhost\n::1 localhost\n";
  if (!run.request.invocation.gateway.empty()) {  // empty: the run reaches no berthd
    auto berthd = HttpUrl::Parse(run.request.invocation.gateway);
    if (!berthd) return berthd.error();
    // Inside, berthd is at the run's own 127.0.0.1 and the run's /etc/hosts names it: a name
    // or 127.0.0.1 can be pointed there (0.0.0.0 is 127.0.0.1 to connect), another address
    // cannot.
    if (!ReachableAtLoopback(berthd->host))
      return MakeError(ErrorKind::kFailedPrecondition,
                       "runner " + run.request.runner_id + " sets " + network +
                           ", which needs runs to reach berthd by a host name or 127.0.0.1, not " +
                           berthd->host + " (berthd's --advertise-url)");
    if (!IsIpAddress(berthd->host)) hosts += "127.0.0.1 " + berthd->host + "\n";
  }
  if (auto written = sys::WriteFileAtomicUnsynced(run.dir / "hosts", hosts); !written)
    return written.error();
  std::error_code ec;
  fs::permissions(run.dir / "hosts",
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read, ec);
  return {};
}

Result<void> LocalLauncher::StartRelay(Run& run) const {
  auto berthd = HttpUrl::Parse(run.request.invocation.gateway);
  if (!berthd) return berthd.error();
  if (auto pointed = PointBerthdAtLoopback(run, "network: berthd_only"); !pointed)
    return pointed.error();
  // The runner, not root, listens at berthd's port in the run's network: one it may take.
  if (berthd->port < 1024)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "runner " + run.request.runner_id +
                         " sets network: berthd_only, which needs runs to reach berthd at a port "
                         "from 1024 (berthd's --advertise-url names " +
                         std::to_string(berthd->port) + ")");
  const fs::path& dir = run.dir;
  std::error_code ec;
  // The folder is berthd's and the run sees it read-only, so the run cannot put a link where
  // the socket goes for a root berthd to chown (a berthd before this one gave the folder to the
  // run: it is taken back first). Only the run's user may connect: the socket is its own.
  fs::create_directories(dir / "relay", ec);
  sys::Fd folder(open((dir / "relay").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!folder || fchown(folder.Get(), geteuid(), getegid()) != 0 || fchmod(folder.Get(), 0755) != 0)
    return MakeError(ErrorKind::kUnavailable, "cannot make the run's relay folder", dir / "relay");
  auto listener = sys::ListenUnix(RelaySocket(dir).string());
  if (!listener) return listener.error();
  const std::optional<uid_t>& owner = run.uid;
  if (owner && fchownat(folder.Get(), RelaySocket(dir).filename().c_str(), *owner, *owner,
                        AT_SYMLINK_NOFOLLOW) != 0)
    return MakeError(ErrorKind::kUnavailable, "cannot give the run its relay socket", dir);
  auto relay = sys::StreamRelay::Start(
      std::move(*listener),
      [host = berthd->host, port = berthd->port] { return sys::ConnectTcp(host, port); });
  if (!relay) return relay.error();
  run.relay = std::move(*relay);
  return {};
}

Result<void> LocalLauncher::OpenNetwork(Run& run) const {
  if (!options_.firewall || !run.uid || CutsNetwork(run.request)) return {};
  const NetworkAllowance& allowance = SettingsOf(run.request).allowance;
  if (auto opened = options_.firewall->Allow(*run.uid, allowance); !opened) return opened.error();
  run.opened = allowance;
  return {};
}

void LocalLauncher::CloseNetwork(Run& run) const {
  if (!run.opened.Any()) return;
  IgnoreError(options_.firewall->Revoke(*run.uid, run.opened),
              "iptables-restore deletes what it inserted unless the kernel refuses: then the "
              "rule stays until berthd's next start writes the chain anew");
  run.opened = {};
}

RunnerExit LocalLauncher::FinishRun(Run& run, std::optional<int> exit_code) {
  run.relay.reset();
  CloseNetwork(run);
  RunnerExit exit = Finish(run.request.run_id, run.dir, exit_code, ReadRunResult(run.dir));
  exit.stop_requested = run.cancelling;
  if (run.cgroup) {
    if (run.cgroup->OomKills() > 0) {
      exit.ended_as = RunnerEnd::kOomKilled;
      exit.message = "a process of the run went over limits.memory (" +
                     std::to_string(*run.limits.memory_bytes) + " bytes) and the kernel killed it";
    }
    DropCgroup(*run.cgroup);  // what left the process group goes too
  }
  if (!run.limit_hit.empty()) {
    exit.ended_as = RunnerEnd::kLimitExceeded;
    exit.message = "stopped: " + run.limit_hit;
  }
  if (fs::path shared = SharedProvidersOf(run.request); !shared.empty())
    harvester_.Enqueue(RunPluginCache(run.dir), std::move(shared), run.request.environment);
  return exit;
}

void LocalLauncher::DropCgroup(const RunCgroup& group) {
  group.KillAll();
  if (!group.Remove()) leftover_cgroups_.push_back(group);
}

void LocalLauncher::RemoveLeftoverCgroups() {
  std::erase_if(leftover_cgroups_, [](const RunCgroup& group) {
    group.KillAll();
    return group.Remove();
  });
}

void LocalLauncher::Loop() {
  MutexLock lock(mutex_);
  while (!stopping_) {
    // A run's exit ends the wait at once; the timeout paces the limit checks and stop deadlines.
    if (ended_.empty()) {
      mutex_.unlock();
      exits_.Wait(std::chrono::milliseconds(20));
      mutex_.lock();
    }
    if (stopping_) break;
    auto now = std::chrono::steady_clock::now();
    for (auto it = running_.begin(); it != running_.end();) {
      Run& run = it->second;
      std::optional<int> code;
      bool done = false;
      if (run.child) {
        code = run.child->TryWait();
        done = code.has_value();
      } else {
        done = !Alive(run.adopted_pid);
      }
      if (!done) CheckLimits(run, now);
      if (!done && run.kill_at && now >= *run.kill_at) {
        if (run.child)
          run.child->Signal(SIGKILL);
        else
          kill(-run.adopted_pid, SIGKILL);
      }
      if (!done) {
        ++it;
        continue;
      }
      // Whatever of the run outlived its process ends with it: in a sandbox, its PID
      // namespace's init is in the group, and every process of the run dies with that.
      kill(-(run.child ? run.child->Pid() : run.adopted_pid), SIGKILL);
      exits_.Forget(run.child ? run.child->Pid() : run.adopted_pid);
      ended_.push_back({it->first, FinishRun(run, code)});
      it = running_.erase(it);
    }
    RemoveLeftoverCgroups();
    StartWaiting();
    std::vector<std::pair<std::string, RunnerExit>> ended;
    ended.swap(ended_);
    std::vector<std::pair<std::string, LaunchEvent>> told;
    told.swap(told_);
    if (ended.empty() && told.empty()) continue;
    mutex_.unlock();
    for (const auto& [run_id, event] : told) observer_.OnRunEvent(run_id, event);
    for (const auto& [run_id, exit] : ended) observer_.OnRunEnd(run_id, exit);
    mutex_.lock();
  }
}

Result<void> LocalLauncher::Recover(const std::vector<LaunchRequest>& adopt,
                                    const RunIsHeld& held) {
  std::set<std::string> adopted_ids;
  std::set<fs::path> roots = {options_.runs_dir};  // where run folders may be
  MutexLock lock(mutex_);
  for (const LaunchRequest& request : adopt) {
    adopted_ids.insert(request.run_id);
    roots.insert(RunDir(request).parent_path());
    roots_.insert(RunDir(request).parent_path());
    if (running_.contains(request.run_id)) continue;
    fs::path dir = RunDir(request);
    // The pid file is written (empty) before the runner starts: without one it never did.
    auto pid_text = sys::ReadFile(dir / "pid");
    const bool launched = pid_text.has_value();
    pid_t pid = launched ? RunnerPid(dir, *pid_text) : -1;
    if (pid > 0) {
      if (pid_text->empty())
        IgnoreError(sys::WriteFileAtomicUnsynced(dir / "pid", std::to_string(pid)),
                    "found again by its command line at the next start");
      Run& run = running_[request.run_id];
      run.dir = dir;
      run.request = request;
      run.adopted_pid = pid;
      run.uid = RunUidOf(dir);
      exits_.Watch(pid);
      // The firewall was written anew at this start: what its runner opens, opened again.
      if (auto opened = OpenNetwork(run); !opened)
        observer_.OnRunEvent(request.run_id,
                             {std::string(kNetworkAllowanceLost), opened.error().message});
      run.limits = SettingsOf(request).limits;
      if (options_.cgroups && !run.limits.NeedingCgroup().empty())
        run.cgroup = options_.cgroups->Existing(request.run_id, run.limits);
      // Its way to berthd went with the berthd before: the runner's relay reconnects to this one.
      if (CutsNetwork(request) && options_.sandbox) {
        if (auto relayed = StartRelay(run); !relayed)
          observer_.OnRunEvent(request.run_id, {std::string(kRelayLost), relayed.error().message});
      }
      continue;
    }
    if (!launched) {
      waiting_.push_back(request);  // never started: start it now
      continue;
    }
    // Its control group outlived it while berthd was away: removed now, or with the leftovers.
    if (const RunLimits& limits = SettingsOf(request).limits;
        options_.cgroups && !limits.NeedingCgroup().empty()) {
      DropCgroup(options_.cgroups->Existing(request.run_id, limits));
    }
    // Read once: what it left decides between an end from its result and a lost runner.
    auto result = ReadRunResult(dir);
    if (!result && result.error().kind == ErrorKind::kNotFound) {
      ended_.push_back(
          {request.run_id,
           RunnerStopped(RunnerEnd::kLost,
                         "the runner ended while berthd was away and left no result")});
    } else {
      ended_.push_back({request.run_id, Finish(request.run_id, dir, std::nullopt, result)});
    }
  }
  // Runners of runs nobody tracks any more are stopped.
  for (const fs::path& root : roots) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      std::string run_id = entry.path().filename().string();
      if (adopted_ids.contains(run_id)) continue;
      auto pid_text = sys::ReadFile(entry.path() / "pid");
      pid_t pid = pid_text ? RunnerPid(entry.path(), *pid_text) : -1;
      if (pid > 0 && !held(run_id)) {
        observer_.OnRunEvent(run_id, {std::string(kUntrackedRunnerStopped),
                                      "stopping the runner of a run berthd no longer tracks"});
        kill(-pid, SIGTERM);
      }
    }
  }
  StartWaiting();
  exits_.Wake();
  return {};
}

void LocalLauncher::PruneEnded(const RunIsHeld& held, size_t keep) {
  std::set<fs::path> roots;
  std::set<std::string> active;
  {
    MutexLock lock(mutex_);
    roots = roots_;
    roots.insert(options_.runs_dir);
    for (const auto& [id, run] : running_) active.insert(id);
    for (const LaunchRequest& waiting : waiting_) active.insert(waiting.run_id);
  }
  // Ended: started once (a pid file) and no runner left; newest start first.
  std::vector<std::pair<fs::file_time_type, fs::path>> ended;
  for (const fs::path& root : roots) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (active.contains(entry.path().filename().string())) continue;
      auto pid_text = sys::ReadFile(entry.path() / "pid");
      if (!pid_text || RunnerPid(entry.path(), *pid_text) > 0) continue;
      auto started = fs::last_write_time(entry.path() / "pid", ec);
      if (!ec) ended.emplace_back(started, entry.path());
    }
  }
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a > b; });
  for (size_t i = keep; i < ended.size(); ++i) {
    if (held(ended[i].second.filename().string())) continue;
    std::error_code ec;
    fs::remove_all(ended[i].second, ec);
  }
}

Result<void> LocalLauncher::KeepsOutOfRuns(const std::vector<fs::path>& secrets) const {
  if (!options_.sandbox) return {};  // no sandbox: no run starts (or all see everything)
  std::vector<fs::path> mounts = environment_mounts_;
  mounts.push_back(options_.runner_binary);
  for (const fs::path& secret : secrets) {
    if (secret.empty()) continue;
    if (auto mount = SeenByEveryRun(secret, mounts))
      return MakeError(ErrorKind::kFailedPrecondition,
                       "berthd's secret " + secret.string() + " is inside " + mount->string() +
                           ", which every local run sees read-only: keep it elsewhere",
                       secret.string());
  }
  return {};
}

int LocalLauncher::Running() const {
  MutexLock lock(mutex_);
  return static_cast<int>(running_.size());
}

int LocalLauncher::Waiting() const {
  MutexLock lock(mutex_);
  return static_cast<int>(waiting_.size());
}

}  // namespace berth::launch
