#include "launch/local/run_limits.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/quantity.h"
#include "sys/files.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kControllers[] = {"memory", "pids", "cpuacct"};
constexpr const char* kRunsFolder = "berth-runs";

std::optional<int64_t> Bytes(const nlohmann::json& limits, const char* field) {
  if (!limits.contains(field) || !limits[field].is_string()) return std::nullopt;
  auto q = Quantity::Parse(limits[field].get<std::string>());
  return q ? q->AsInt64() : std::nullopt;
}

std::optional<int64_t> Integer(const nlohmann::json& limits, const char* field) {
  if (!limits.contains(field) || !limits[field].is_number_integer()) return std::nullopt;
  return limits[field].get<int64_t>();
}

Result<void> WriteControl(const fs::path& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  if (!out)
    return MakeError(ErrorKind::kFailedPrecondition, "cannot write " + value, file.string());
  return {};
}

// This process's group of a v1 controller, from /proc/self/cgroup ("4:memory:/a/b").
std::optional<std::string> OwnGroup(const std::string& text, const std::string& controller) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::istringstream names(line.substr(first + 1, second - first - 1));
    for (std::string name; std::getline(names, name, ',');) {
      if (name == controller) return line.substr(second + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

RunLimits RunLimits::FromRunner(const nlohmann::json& runner_configuration) {
  RunLimits out;
  if (!runner_configuration.is_object() || !runner_configuration.contains("limits")) return out;
  const nlohmann::json& limits = runner_configuration["limits"];
  if (!limits.is_object()) return out;
  out.memory_bytes = Bytes(limits, "memory");
  out.disk_bytes = Bytes(limits, "disk");
  out.cpu_seconds = Integer(limits, "cpu_seconds");
  out.processes = Integer(limits, "processes");
  return out;
}

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
  auto dir = dirs_.find("cpuacct");
  if (dir == dirs_.end()) return std::nullopt;
  auto text = sys::ReadFile(dir->second / "cpuacct.usage");
  if (!text) return std::nullopt;
  return static_cast<double>(std::strtoll(text->c_str(), nullptr, 10)) / 1e9;
}

int64_t RunCgroup::OomKills() const {
  auto dir = dirs_.find("memory");
  if (dir == dirs_.end()) return 0;
  auto text = sys::ReadFile(dir->second / "memory.oom_control");
  if (!text) return 0;
  size_t at = text->find("oom_kill ");
  return at == std::string::npos ? 0 : std::strtoll(text->c_str() + at + 9, nullptr, 10);
}

void RunCgroup::KillAll() const {
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
  if (geteuid() != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "berthd is not root, and only root may make control groups here");
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers", ec))
    return MakeError(ErrorKind::kFailedPrecondition,
                     "this host has cgroup v2 only, which berth's local runs do not use yet");
  auto own = sys::ReadFile("/proc/self/cgroup");
  if (!own) return own.error();
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
  auto set = [&](const char* controller, const char* file, int64_t value) -> Result<void> {
    return WriteControl(group.dirs_[controller] / file, std::to_string(value));
  };
  Result<void> written;
  if (limits.memory_bytes) {
    written = set("memory", "memory.limit_in_bytes", *limits.memory_bytes);
    // Swap counts too where the kernel accounts it: a run may not page its way past the limit.
    std::error_code ec;
    if (written && fs::exists(group.dirs_["memory"] / "memory.memsw.limit_in_bytes", ec))
      written = set("memory", "memory.memsw.limit_in_bytes", *limits.memory_bytes);
  }
  if (written && limits.processes) written = set("pids", "pids.max", *limits.processes);
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
