// Small file helpers: read a whole file, write one atomically, a temporary folder that removes
// itself.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::sys {

Result<std::string> ReadFile(const std::filesystem::path& path);

// A file that a less trusted process could have replaced (what a run leaves in its folder):
// relative is opened under dir one part at a time, never through a link, without blocking (a
// FIFO) and without taking a terminal; only a regular file of at most max_bytes is read.
// kNotFound when it is absent; kFailedPrecondition, naming what it is, when it is anything else.
Result<std::string> ReadFileBeneath(const std::filesystem::path& dir,
                                    const std::filesystem::path& relative, size_t max_bytes);

// The file this process runs (/proc/self/exe), whatever argv[0] said.
Result<std::filesystem::path> SelfExecutable();

// Writes to a sibling temporary file, fsyncs it, then renames it over path: a reader sees the
// old content or the new, never half of it.
Result<void> WriteFileAtomic(const std::filesystem::path& path, std::string_view content,
                             std::filesystem::perms mode = std::filesystem::perms::owner_read |
                                                           std::filesystem::perms::owner_write);

// As WriteFileAtomic without the fsync: a reader still sees the old content or the new, and a
// crash of the writer loses nothing, but a power loss may. For files that do not outlive the
// run that wrote them (its staged inputs, its TF configuration, its token): their fsyncs were
// a tenth of a local deployment's time outside TF on this project's machine.
Result<void> WriteFileAtomicUnsynced(
    const std::filesystem::path& path, std::string_view content,
    std::filesystem::perms mode = std::filesystem::perms::owner_read |
                                  std::filesystem::perms::owner_write);

// Writes all of data to fd, retrying on EINTR and short writes; false when the fd refuses the
// rest (a closed reader, a full disk).
bool WriteAll(int fd, std::string_view data);

// Gives tree and all beneath it to uid:gid, links themselves and never what they point at, and
// never crossing into another file system. For a tree no other process changes meanwhile.
Result<void> ChownTree(const std::filesystem::path& tree, uid_t uid, gid_t gid);

class TempDir {
 public:
  // A new folder under $TMPDIR (or /tmp) named prefix-XXXXXX.
  static Result<TempDir> Create(std::string_view prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& Path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace berth::sys
