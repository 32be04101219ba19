#include "launch/local/run_limits.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "sys/files.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kControllers[] = {"memory", "pids", "cpuacct"};
constexpr const char* kRunsFolder = "berth-runs";
// cgroup v2's one folder per group; CPU time (cpu.stat) needs no controller there.
constexpr const char* kUnified = "unified";
constexpr const char* kEnableForChildren = "+memory +pids";

Result<void> WriteControl(const fs::path& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  if (!out)
    return MakeError(ErrorKind::kFailedPrecondition, "cannot write " + value, file.string());
  return {};
}

// The value of key in a flat keyed file of "key value" lines (cpu.stat, memory.events, v1's
// memory.oom_control).
std::optional<int64_t> KeyedValue(const std::string& text, std::string_view key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ')
      return std::strtoll(line.c_str() + key.size() + 1, nullptr, 10);
  }
  return std::nullopt;
}

// This process's group of a v1 controller, from /proc/self/cgroup ("4:memory:/a/b"); of
// cgroup v2, controller "" ("0::/a/b").
std::optional<std::string> OwnGroup(const std::string& text, const std::string& controller) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string listed = line.substr(first + 1, second - first - 1);
    if (controller.empty() && listed.empty() && line.starts_with("0:"))
      return line.substr(second + 1);
    std::istringstream names(listed);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == controller) return line.substr(second + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string RunLimits::NeedingCgroup() const {
  if (memory_bytes) return "limits.memory";
  if (cpu_seconds) return "limits.cpu_seconds";
  if (processes) return "limits.processes";
  return "";
}

std::vector<fs::path> RunCgroup::ProcsFiles() const {
  std::vector<fs::path> out;
  out.reserve(dirs_.size());
  for (const auto& [controller, dir] : dirs_) out.push_back(dir / "cgroup.procs");
  return out;
}

std::optional<double> RunCgroup::CpuSeconds() const {
  if (auto v1 = dirs_.find("cpuacct"); v1 != dirs_.end()) {
    auto text = sys::ReadFile(v1->second / "cpuacct.usage");
    if (!text) return std::nullopt;
    return static_cast<double>(std::strtoll(text->c_str(), nullptr, 10)) / 1e9;
  }
  if (auto v2 = dirs_.find(kUnified); v2 != dirs_.end()) {
    auto text = sys::ReadFile(v2->second / "cpu.stat");
    auto usec = text ? KeyedValue(*text, "usage_usec") : std::nullopt;
    if (!usec) return std::nullopt;
    return static_cast<double>(*usec) / 1e6;
  }
  return std::nullopt;
}

int64_t RunCgroup::OomKills() const {
  fs::path events;
  if (auto v1 = dirs_.find("memory"); v1 != dirs_.end()) events = v1->second / "memory.oom_control";
  if (auto v2 = dirs_.find(kUnified); v2 != dirs_.end()) events = v2->second / "memory.events";
  if (events.empty()) return 0;
  auto text = sys::ReadFile(events);
  return text ? KeyedValue(*text, "oom_kill").value_or(0) : 0;
}

void RunCgroup::KillAll() const {
  // cgroup v2 (Linux 5.14 on) kills the whole group at once, forks in flight included.
  if (auto v2 = dirs_.find(kUnified); v2 != dirs_.end()) {
    std::error_code ec;
    if (fs::exists(v2->second / "cgroup.kill", ec))
      IgnoreError(WriteControl(v2->second / "cgroup.kill", "1"),
                  "the processes are signalled one by one below as well");
  }
  for (const fs::path& procs : ProcsFiles()) {
    auto text = sys::ReadFile(procs);
    if (!text) continue;
    std::istringstream pids(*text);
    for (pid_t pid; pids >> pid;) kill(pid, SIGKILL);
  }
}

bool RunCgroup::Remove() const {
  bool removed = true;
  for (const auto& [controller, dir] : dirs_) {
    if (rmdir(dir.c_str()) != 0 && errno != ENOENT) removed = false;
  }
  return removed;
}

Result<CgroupHost> CgroupHost::Probe() {
  auto own = sys::ReadFile("/proc/self/cgroup");
  if (!own) return own.error();
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers", ec)) {
    auto group = OwnGroup(*own, "");
    if (!group)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "cgroup v2: /proc/self/cgroup names no group of berthd's");
    return ProbeUnified("/sys/fs/cgroup", *group, getpid());
  }
  if (geteuid() != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "berthd is not root, and only root may make control groups here (cgroup v1)");
  CgroupHost host;
  for (const char* controller : kControllers) {
    auto group = OwnGroup(*own, controller);
    fs::path mount = fs::path("/sys/fs/cgroup") / controller;
    if (!group || !fs::exists(mount / "cgroup.procs", ec))
      return MakeError(ErrorKind::kFailedPrecondition,
                       std::string("the cgroup v1 controller ") + controller + " is not mounted",
                       mount.string());
    fs::path parent = mount / fs::path(*group).relative_path() / kRunsFolder;
    fs::create_directories(parent, ec);
    if (ec)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "cannot make control groups: " + ec.message(), parent.string());
    host.parents_[controller] = parent;
  }
  auto probe = host.Create("probe-" + std::to_string(getpid()),
                           {.memory_bytes = 64 << 20, .cpu_seconds = 1, .processes = 64});
  if (!probe) return probe.error();
  probe->Remove();
  return host;
}

Result<CgroupHost> CgroupHost::ProbeUnified(const fs::path& mount, const std::string& own_group,
                                            pid_t self) {
  const fs::path own = mount / fs::path(own_group).relative_path();
  auto controllers = sys::ReadFile(own / "cgroup.controllers");
  if (!controllers) return controllers.error();
  std::istringstream names(*controllers);
  std::set<std::string> delegated{std::istream_iterator<std::string>(names), {}};
  for (const char* needed : {"memory", "pids"}) {
    if (!delegated.contains(needed))
      return MakeError(ErrorKind::kFailedPrecondition,
                       std::string("cgroup v2: the ") + needed +
                           " controller is not delegated to berthd's group (systemd: "
                           "Delegate=yes in berthd's unit)",
                       own.string());
  }
  auto refused = [&](const std::string& what, const Error& why) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "cgroup v2: " + what +
                         " (berthd's group must be delegated to it, and hold "
                         "no process but berthd's): " +
                         why.message,
                     own.string());
  };
  // No process may be in a group whose children have controllers: berthd moves to a leaf.
  std::error_code ec;
  fs::create_directories(own / "berthd", ec);
  if (auto moved = WriteControl(own / "berthd" / "cgroup.procs", std::to_string(self)); !moved)
    return refused("cannot move berthd into " + (own / "berthd").string(), moved.error());
  const fs::path runs = own / kRunsFolder;
  for (const fs::path& parent : {own, runs}) {
    fs::create_directories(parent, ec);
    if (auto enabled = WriteControl(parent / "cgroup.subtree_control", kEnableForChildren);
        !enabled)
      return refused("cannot enable memory and pids for the groups under " + parent.string(),
                     enabled.error());
  }
  CgroupHost host;
  host.parents_[kUnified] = runs;
  auto probe = host.Create("probe-" + std::to_string(self),
                           {.memory_bytes = 64 << 20, .cpu_seconds = 1, .processes = 64});
  if (!probe) return probe.error();
  probe->Remove();
  return host;
}

bool CgroupHost::Unified() const { return parents_.contains(kUnified); }

Result<RunCgroup> CgroupHost::Create(const std::string& name, const RunLimits& limits) const {
  RunCgroup group = Existing(name, limits);
  for (const auto& [controller, dir] : group.dirs_) {
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (ec) {
      group.Remove();
      return MakeError(ErrorKind::kFailedPrecondition,
                       "cannot make the run's control group: " + ec.message(), dir.string());
    }
  }
  const bool unified = Unified();
  auto folder = [&](const char* controller) {
    return group.dirs_[unified ? kUnified : controller];
  };
  Result<void> written;
  if (limits.memory_bytes) {
    const fs::path memory = folder("memory");
    const std::string bytes = std::to_string(*limits.memory_bytes);
    written = WriteControl(memory / (unified ? "memory.max" : "memory.limit_in_bytes"), bytes);
    // A run may not page its way past the limit where the kernel accounts swap: v1 counts it
    // in memsw (the same limit), v2 apart from memory (none at all).
    const fs::path swap = memory / (unified ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
    std::error_code ec;
    if (written && fs::exists(swap, ec)) written = WriteControl(swap, unified ? "0" : bytes);
  }
  if (written && limits.processes)
    written = WriteControl(folder("pids") / "pids.max", std::to_string(*limits.processes));
  if (!written) {
    group.Remove();
    return written.error();
  }
  return group;
}

RunCgroup CgroupHost::Existing(const std::string& name, const RunLimits& limits) const {
  // Only the controllers its limits need: each is a folder to make and remove, about a
  // millisecond each on cgroup v1, on a run's way in and out.
  const std::map<std::string, bool> needed = {{"memory", limits.memory_bytes.has_value()},
                                              {"cpuacct", limits.cpu_seconds.has_value()},
                                              {"pids", limits.processes.has_value()}};
  RunCgroup group;
  if (Unified()) {
    if (!limits.NeedingCgroup().empty()) group.dirs_[kUnified] = parents_.at(kUnified) / name;
    return group;
  }
  for (const auto& [controller, parent] : parents_) {
    if (needed.at(controller)) group.dirs_[controller] = parent / name;
  }
  return group;
}

FolderUsage DiskUsage(const fs::path& dir, int64_t max_entries) {
  FolderUsage usage;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (++usage.entries > max_entries) {
      usage.complete = false;
      break;
    }
    struct stat st {};
    if (lstat(it->path().c_str(), &st) == 0)
      usage.bytes += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return usage;
}

}  // namespace berth::launch
