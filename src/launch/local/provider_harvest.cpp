// Copying the packages a run fetched into its runner's shared cache.
#include "launch/local/provider_harvest.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "crypto/digest.h"
#include "launch/local/shared_cache_room.h"
#include "sys/fd.h"
#include "tf/provider_packages.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxPackageDepth = 8;          // folders inside a package
constexpr size_t kMaxFolderEntries = 10000;  // in any one folder of a run's cache
constexpr const char* kIncoming = ".incoming";

// A folder in parent, never through a link.
sys::Fd OpenDir(int parent, const std::string& name) {
  return sys::Fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// A folder's entries but . and .., sorted; nullopt when it cannot be read or holds more than
// kMaxFolderEntries (a run could make millions, for berthd to hold in memory).
std::optional<std::vector<std::string>> Names(int dir) {
  int copy = dup(dir);
  if (copy < 0) return std::nullopt;
  DIR* listing = fdopendir(copy);
  if (!listing) {
    close(copy);
    return std::nullopt;
  }
  rewinddir(listing);  // the copy shares its offset with dir
  std::vector<std::string> names;
  while (const dirent* entry = readdir(listing)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
    if (names.size() > kMaxFolderEntries) break;
  }
  closedir(listing);
  if (names.size() > kMaxFolderEntries) return std::nullopt;
  std::sort(names.begin(), names.end());
  return names;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One pass over a package in a run's cache: its regular files hashed as tofu hashes a package
// and, when dest is a folder, copied there read-only.
class PackageWalk {
 public:
  // read: what the harvest has read so far, this walk's reading added.
  PackageWalk(const HarvestLimits& limits, uint64_t& read) : limits_(limits), read_(read) {}

  // False when the package is beyond a limit or cannot be read whole.
  bool Walk(int src, int dest, const std::string& prefix = "", int depth = 0) {
    if (depth > kMaxPackageDepth) return false;
    auto names = Names(src);
    if (!names) return false;
    for (const std::string& name : *names) {
      // tofu cannot hash a path with a newline, so no lock file lists such a package.
      if (name.find('\n') != std::string::npos) return false;
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      struct stat entry {};
      if (fstatat(src, name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0) return false;
      if (S_ISDIR(entry.st_mode)) {
        sys::Fd from = OpenDir(src, name);
        sys::Fd to;
        if (dest >= 0) {
          if (mkdirat(dest, name.c_str(), 0755) != 0) return false;
          to = OpenDir(dest, name);
          if (!to) return false;
        }
        if (!from || !Walk(from.Get(), dest >= 0 ? to.Get() : -1, path, depth + 1)) return false;
      } else if (S_ISREG(entry.st_mode) && !File(src, dest, name, path)) {
        return false;
      }
      // Links, FIFOs, sockets and devices are not taken: tofu's packages are files.
    }
    return true;
  }

  std::string Hash() const { return hasher_.Finish(); }

 private:
  bool File(int src, int dest, const std::string& name, const std::string& path) {
    if (++files_ > limits_.files) return false;
    // Not blocking: the entry could have become a FIFO since it was looked at.
    sys::Fd in(openat(src, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat opened {};
    if (!in || fstat(in.Get(), &opened) != 0 || !S_ISREG(opened.st_mode)) return false;
    sys::Fd out;
    if (dest >= 0) {
      const mode_t mode = (opened.st_mode & 0111) != 0 ? 0555 : 0444;
      out = sys::Fd(openat(dest, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
      if (!out || fchmod(out.Get(), mode) != 0) return false;  // whatever berthd's umask
    }
    crypto::Sha256 digest;
    std::array<char, 1 << 16> buffer{};
    ssize_t n = 0;
    while ((n = read(in.Get(), buffer.data(), buffer.size())) > 0) {
      bytes_ += static_cast<uint64_t>(n);
      read_ += static_cast<uint64_t>(n);
      if (bytes_ > limits_.package_bytes || read_ > limits_.run_bytes) return false;
      digest.Update({buffer.data(), static_cast<size_t>(n)});
      if (out && !WriteAll(out.Get(), buffer.data(), static_cast<size_t>(n))) return false;
    }
    if (n < 0) return false;
    hasher_.AddFile(path, digest.HexDigest());
    return true;
  }

  const HarvestLimits& limits_;
  uint64_t& read_;
  tf::PackageHasher hasher_;
  uint64_t bytes_ = 0;
  int files_ = 0;
};

struct Package {
  tf::LockedProvider provider;  // its address and version (no hashes)
  sys::Fd dir;
};

// A package the run borrowed: its plugin cache's link to a shared package (or what the run
// made look like one).
struct Borrowed {
  tf::LockedProvider provider;
  std::string target;
};
constexpr size_t kMaxBorrowed = 256;

// The package folders of a plugin cache: HOST/NS/TYPE/VERSION/PLATFORM, this machine's
// platform only, each name one a package path may have; at most max of them (each holds a
// descriptor open), the others counted in beyond. Links in a package's place are what the run
// borrowed: their targets are read, never followed.
void FindPackages(int dir, std::vector<std::string>& parts, size_t max, std::vector<Package>& found,
                  std::vector<Borrowed>& borrowed, int& beyond) {
  auto names = Names(dir);
  if (!names) return;
  for (const std::string& name : *names) {
    if (!tf::IsPackagePathPart(name)) continue;  // tofu's NAME.lock files among them
    if (parts.size() == 4 && name != tf::ThisPlatform()) continue;
    if (parts.size() == 4 && found.size() >= max) {
      ++beyond;
      continue;
    }
    sys::Fd sub = OpenDir(dir, name);
    const tf::LockedProvider provider = parts.size() == 4 ? tf::LockedProvider{.host = parts[0],
                                                                               .ns = parts[1],
                                                                               .type = parts[2],
                                                                               .version = parts[3]}
                                                          : tf::LockedProvider{};
    if (!sub) {
      std::array<char, 4096> target{};
      const ssize_t n = readlinkat(dir, name.c_str(), target.data(), target.size());
      if (parts.size() == 4 && n > 0 && static_cast<size_t>(n) < target.size() &&
          borrowed.size() < kMaxBorrowed)
        borrowed.push_back({provider, std::string(target.data(), static_cast<size_t>(n))});
      continue;
    }
    if (parts.size() == 4) {
      found.push_back({provider, std::move(sub)});
      continue;
    }
    parts.push_back(name);
    FindPackages(sub.Get(), parts, max, found, borrowed, beyond);
    parts.pop_back();
  }
}

// The shared package a borrowed link names, if it is one: shared's folder for its provider and
// this platform, a hash's 64 hex digits.
std::optional<fs::path> SharedPackageOf(const Borrowed& link, const fs::path& shared) {
  fs::path target = fs::path(link.target).lexically_normal();
  const fs::path folder = shared / link.provider.host / link.provider.ns / link.provider.type /
                          link.provider.version / std::string(tf::ThisPlatform());
  const std::string hex = target.filename().string();
  if (target.parent_path() != folder || hex.size() != 64 ||
      hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(target, ec))) return std::nullopt;
  return target;
}

}  // namespace

HarvestCounts HarvestProviders(const fs::path& run_cache, const fs::path& shared,
                               const std::string& environment, const HarvestLimits& limits) {
  HarvestCounts counts;
  sys::Fd root(open(run_cache.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root) return counts;
  std::vector<std::string> parts;
  std::vector<Package> packages;
  std::vector<Borrowed> borrowed;
  FindPackages(root.Get(), parts, static_cast<size_t>(std::max(limits.packages, 0)), packages,
               borrowed, counts.refused);
  for (const Borrowed& link : borrowed) {
    if (auto package = SharedPackageOf(link, shared)) RecordUse(shared, *package, environment);
  }
  if (packages.empty()) return counts;
  std::error_code ec;
  const fs::path incoming = shared / kIncoming;
  fs::remove_all(incoming, ec);  // what a harvest cut short left
  std::vector<fs::path> taken;
  uint64_t read = 0;
  for (const Package& package : packages) {
    // Hashed first: a package the cache has is not copied again.
    PackageWalk seen(limits, read);
    if (!seen.Walk(package.dir.Get(), -1)) {
      ++counts.refused;
      continue;
    }
    if (const fs::path kept =
            tf::SharedPackagePath(shared, package.provider, tf::ThisPlatform(), seen.Hash());
        fs::exists(kept, ec)) {
      RecordUse(shared, kept, environment);
      ++counts.known;
      continue;
    }
    // Kept under the hash of the copy: the run could change its files while they are read.
    fs::create_directories(incoming, ec);
    std::string staging = (incoming / "XXXXXX").string();
    if (!mkdtemp(staging.data()) || chmod(staging.c_str(), 0755) != 0) {
      ++counts.refused;
      continue;
    }
    sys::Fd dest(open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    PackageWalk copied(limits, read);
    const fs::path target =
        dest && copied.Walk(package.dir.Get(), dest.Get())
            ? tf::SharedPackagePath(shared, package.provider, tf::ThisPlatform(), copied.Hash())
            : fs::path();
    if (!target.empty()) fs::create_directories(target.parent_path(), ec);
    if (target.empty() || rename(staging.c_str(), target.c_str()) != 0) {
      fs::remove_all(staging, ec);
      ++(target.empty() ? counts.refused : counts.known);  // a run alongside took it first
      continue;
    }
    RecordUse(shared, target, environment);
    taken.push_back(target);
    ++counts.taken;
  }
  fs::remove_all(incoming, ec);
  if (taken.empty()) return counts;
  // What no room could be made for goes again; the environment's next run fetches it.
  const auto dropped =
      MakeRoom(shared, taken, environment,
               {.max_bytes = limits.cache_bytes, .protected_for = limits.protected_for});
  counts.taken -= static_cast<int>(dropped.size());
  counts.refused += static_cast<int>(dropped.size());
  return counts;
}

ProviderHarvester::ProviderHarvester(HarvestLimits limits,
                                     std::function<void(const HarvestCounts&)> done)
    : limits_(limits), done_(std::move(done)) {
  thread_ = std::thread([this] { Loop(); });
}

ProviderHarvester::~ProviderHarvester() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProviderHarvester::Enqueue(fs::path run_cache, fs::path shared, std::string environment) {
  {
    MutexLock lock(mutex_);
    queue_.push_back({std::move(run_cache), std::move(shared), std::move(environment)});
  }
  wake_.notify_all();
}

void ProviderHarvester::Loop() {
  MutexLock lock(mutex_);
  while (true) {
    wake_.wait(mutex_, [this]() REQUIRES(mutex_) { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Harvest harvest = std::move(queue_.front());
    queue_.pop_front();
    mutex_.unlock();
    HarvestCounts counts =
        HarvestProviders(harvest.run_cache, harvest.shared, harvest.environment, limits_);
    if (done_) done_(counts);
    mutex_.lock();
  }
}

}  // namespace berth::launch
