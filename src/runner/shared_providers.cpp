// Linking a run's providers from its runner's shared cache.
#include "runner/shared_providers.h"

#include <system_error>

#include "sys/files.h"
#include "tf/provider_packages.h"

namespace berth::runner {

namespace fs = std::filesystem;

std::vector<std::string> LendSharedProviders(const fs::path& shared, const fs::path& lock_file,
                                             const fs::path& plugin_cache) {
  std::vector<std::string> lent;
  auto text = sys::ReadFile(lock_file);
  if (!text) return lent;  // no lock file: tofu fetches every provider, as it would anyway
  for (const tf::LockedProvider& provider : tf::ParseLockFile(*text)) {
    const fs::path link = plugin_cache / provider.host / provider.ns / provider.type /
                          provider.version / std::string(tf::ThisPlatform());
    std::error_code ec;
    if (fs::exists(fs::symlink_status(link, ec))) continue;
    for (const std::string& h1 : provider.h1_hashes) {
      fs::path package = tf::SharedPackagePath(shared, provider, tf::ThisPlatform(), h1);
      if (!fs::is_directory(package, ec)) continue;
      fs::create_directories(link.parent_path(), ec);
      fs::create_directory_symlink(package, link, ec);
      if (!ec)
        lent.push_back(provider.host + "/" + provider.ns + "/" + provider.type + " " +
                       provider.version);
      break;
    }
  }
  return lent;
}

}  // namespace berth::runner
