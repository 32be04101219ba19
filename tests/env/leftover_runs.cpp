#include "leftover_runs.h"

#include <signal.h>

#include <string>
#include <system_error>

namespace berth::testenv {

int StopRunsUnder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string under = fs::weakly_canonical(dir).string() + "/";
  int found = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cwd = fs::read_symlink(entry.path() / "cwd", ec).string();
    if (ec || !cwd.starts_with(under)) continue;
    const pid_t pid = std::stoi(name);
    kill(-pid, SIGKILL);  // the run's sandbox leads its own process group
    kill(pid, SIGKILL);
    ++found;
  }
  return found;
}

}  // namespace berth::testenv
