// Keeping an earlier run's init aside while the module is laid out again.
#include "runner/prepared_init.h"

#include <array>
#include <string_view>
#include <system_error>

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

// What init leaves where TF runs: the providers and modules it installed, the locks it chose.
constexpr std::array<std::string_view, 2> kInitialised{".terraform", ".terraform.lock.hcl"};
// Beside the module while it is laid out; in root, so that moving in and out is a rename.
constexpr std::string_view kStash = ".berth-prepared-init";

// Remote modules are files the apply reads from where init put them (a script, a template),
// which the plan run could have changed and no lock file checks: their run inits again.
bool HoldsRemoteModules(const fs::path& dot_terraform) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dot_terraform / "modules", ec)) {
    if (entry.path().filename() != "modules.json") return true;
  }
  return false;
}

}  // namespace

PreparedInit PreparedInit::Stash(const fs::path& root, const fs::path& workdir) {
  PreparedInit init;
  std::error_code ec;
  // A link is not a folder of its own: what it points at was never this run's init.
  bool initialised = fs::is_directory(fs::symlink_status(workdir / ".terraform", ec)) &&
                     !HoldsRemoteModules(workdir / ".terraform");
  fs::path stash = root / kStash;
  if (initialised) {
    fs::remove_all(stash, ec);
    initialised = fs::create_directory(stash, ec);
  }
  if (initialised) {
    for (std::string_view name : kInitialised) fs::rename(workdir / name, stash / name, ec);
    initialised = fs::is_directory(fs::symlink_status(stash / ".terraform", ec));
  }
  // The rest of the earlier layout goes: the module is laid out as the bundle has it. Links are
  // removed, not followed.
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!initialised || entry.path().filename() != kStash) fs::remove_all(entry.path(), ec);
  }
  if (initialised) init.stash_ = std::move(stash);
  return init;
}

bool PreparedInit::Restore(const fs::path& workdir) {
  if (stash_.empty()) return false;
  std::error_code ec;
  bool restored = true;
  for (std::string_view name : kInitialised) {
    if (!fs::exists(fs::symlink_status(stash_ / name, ec))) continue;  // no lock file: init's
    fs::rename(stash_ / name, workdir / name, ec);
    if (ec) restored = false;
  }
  fs::remove_all(stash_, ec);
  stash_.clear();
  return restored;
}

}  // namespace berth::runner
