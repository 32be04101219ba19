#include "launch/local/shared_cache_room.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <system_error>

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

// Beside the cache, not in it: the runs see the cache (read-only), and tofu its folders.
fs::path UsesOf(const fs::path& shared) {
  return shared.parent_path() / (shared.filename().string() + ".uses");
}

// environment as one file name ("PROJECT~ENV"); ids are DNS labels, anything else is "other".
std::string UserName(const std::string& environment) {
  std::string name = environment;
  std::replace(name.begin(), name.end(), '/', '~');
  const bool plain = !name.empty() && name.size() <= 255 && name.front() != '.' &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                              c == '.' || c == '~';
                     });
  return plain ? name : "other";
}

struct Kept {
  fs::path path;
  uint64_t bytes = 0;
  fs::file_time_type last_used;  // taken (its folder's time) or used by any environment
  bool protected_ = false;       // another environment used it within the window
};

}  // namespace

void RecordUse(const fs::path& shared, const fs::path& package, const std::string& environment) {
  std::error_code ec;
  const fs::path uses = UsesOf(shared) / package.lexically_relative(shared);
  fs::create_directories(uses, ec);
  const fs::path use = uses / UserName(environment);
  if (!fs::exists(use, ec)) {
    if (FILE* made = std::fopen(use.c_str(), "w")) std::fclose(made);
  }
  fs::last_write_time(use, fs::file_time_type::clock::now(), ec);
}

std::vector<fs::path> MakeRoom(const fs::path& shared, const std::vector<fs::path>& just_taken,
                               const std::string& environment, const CacheRoom& room) {
  const std::string us = UserName(environment);
  const auto window_start = fs::file_time_type::clock::now() - room.protected_for;
  std::vector<Kept> packages;
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(shared, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() != 5 || !it->is_directory(ec)) continue;  // HOST/NS/TYPE/VERSION/PLATFORM/HASH
    Kept package{.path = it->path(), .last_used = fs::last_write_time(it->path(), ec)};
    for (const auto& file : fs::recursive_directory_iterator(it->path(), ec)) {
      if (file.is_regular_file(ec)) package.bytes += file.file_size(ec);
    }
    for (const auto& use :
         fs::directory_iterator(UsesOf(shared) / package.path.lexically_relative(shared), ec)) {
      const fs::file_time_type used = fs::last_write_time(use.path(), ec);
      package.last_used = std::max(package.last_used, used);
      if (use.path().filename() != us && used >= window_start) package.protected_ = true;
    }
    total += package.bytes;
    packages.push_back(std::move(package));
    it.disable_recursion_pending();
  }
  std::sort(packages.begin(), packages.end(),
            [](const Kept& a, const Kept& b) { return a.last_used < b.last_used; });
  auto taken_now = [&](const Kept& p) {
    return std::find(just_taken.begin(), just_taken.end(), p.path) != just_taken.end();
  };
  std::vector<fs::path> dropped;
  auto remove = [&](const Kept& package) {
    fs::remove_all(package.path, ec);
    if (ec) return;
    fs::remove_all(UsesOf(shared) / package.path.lexically_relative(shared), ec);
    total -= package.bytes;
    if (taken_now(package)) dropped.push_back(package.path);
  };
  for (const Kept& package : packages) {
    if (total <= room.max_bytes) break;
    if (!package.protected_ && !taken_now(package)) remove(package);
  }
  for (const Kept& package : packages) {
    if (total <= room.max_bytes) break;
    if (taken_now(package)) remove(package);
  }
  return dropped;
}

}  // namespace berth::launch
