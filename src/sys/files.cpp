// File helpers on POSIX calls, so that errors carry errno and the path.
#include "sys/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sys/fd.h"

namespace berth::sys {
namespace {

Error Errno(std::string_view what, const std::filesystem::path& path) {
  return MakeError(ErrorKind::kInternal, std::string(what) + ": " + std::strerror(errno),
                   path.string());
}

// What a file that is not a regular one is, for an error that says why it was not read.
std::string_view KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// The refusal of what is at path when it is not the kind expected ("file" or "folder").
Error Unexpected(mode_t mode, std::string_view expected, const std::filesystem::path& path) {
  return MakeError(ErrorKind::kFailedPrecondition,
                   "not read: " + std::string(KindOf(mode)) + " where a " + std::string(expected) +
                       " was expected",
                   path.string());
}

// What is left to read of fd, refused past max_bytes (the file can grow while it is read: the
// cap holds whatever its size said).
Result<std::string> ReadAll(int fd, const std::filesystem::path& path, size_t max_bytes) {
  std::string content;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > max_bytes)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "not read: larger than " + std::to_string(max_bytes) + " bytes",
                       path.string());
  }
  return content;
}

}  // namespace

Result<std::filesystem::path> SelfExecutable() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return MakeError(ErrorKind::kInternal, "cannot read /proc/self/exe: " + ec.message());
  return self;
}

Result<std::string> ReadFile(const std::filesystem::path& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return MakeError(ErrorKind::kNotFound, "no such file", path.string());
    return Errno("cannot open", path);
  }
  return ReadAll(fd.Get(), path, SIZE_MAX);
}

Result<std::string> ReadFileBeneath(const std::filesystem::path& dir,
                                    const std::filesystem::path& relative, size_t max_bytes) {
  const std::filesystem::path shown = dir / relative;
  Fd at(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!at) return Errno("cannot open", dir);
  std::vector<std::string> parts;
  for (const auto& part : relative) {
    if (part.empty() || part == "." || part == ".." || part == "/")
      return MakeError(ErrorKind::kInvalidArgument, "a path beneath a folder names no . or ..",
                       shown.string());
    parts.push_back(part.string());
  }
  if (parts.empty()) return MakeError(ErrorKind::kInvalidArgument, "no file named", shown.string());
  Fd file;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int flags =
        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK | O_NOCTTY : O_DIRECTORY);
    Fd next(openat(at.Get(), parts[i].c_str(), flags));
    if (!next) {
      if (errno == ENOENT) return MakeError(ErrorKind::kNotFound, "no such file", shown.string());
      // O_NOFOLLOW's refusal of a link, O_DIRECTORY's of anything else, a socket's ENXIO: say
      // what is there.
      const int error = errno;
      struct stat there {};
      if (fstatat(at.Get(), parts[i].c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
          (last ? !S_ISREG(there.st_mode) : !S_ISDIR(there.st_mode)))
        return Unexpected(there.st_mode, last ? "file" : "folder", shown);
      errno = error;
      return Errno("cannot open", shown);
    }
    if (last)
      file = std::move(next);
    else
      at = std::move(next);
  }
  struct stat opened {};
  if (fstat(file.Get(), &opened) != 0) return Errno("cannot stat", shown);
  if (!S_ISREG(opened.st_mode)) return Unexpected(opened.st_mode, "file", shown);
  return ReadAll(file.Get(), shown, max_bytes);
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

namespace {

Result<void> WriteReplacing(const std::filesystem::path& path, std::string_view content,
                            std::filesystem::perms mode, bool sync) {
  std::filesystem::path temp = path;
  temp += ".tmp-" + std::to_string(getpid());
  {
    Fd fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode)));
    if (!fd) return Errno("cannot create", temp);
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = write(fd.Get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        unlink(temp.c_str());
        return Errno("cannot write", temp);
      }
      done += static_cast<size_t>(n);
    }
    if (sync && fsync(fd.Get()) != 0) {
      unlink(temp.c_str());
      return Errno("cannot sync", temp);
    }
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return Errno("cannot rename into place", path);
  }
  return {};
}

}  // namespace

Result<void> WriteFileAtomic(const std::filesystem::path& path, std::string_view content,
                             std::filesystem::perms mode) {
  return WriteReplacing(path, content, mode, true);
}

Result<void> WriteFileAtomicUnsynced(const std::filesystem::path& path, std::string_view content,
                                     std::filesystem::perms mode) {
  return WriteReplacing(path, content, mode, false);
}

Result<TempDir> TempDir::Create(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return Errno("cannot create temporary folder", pattern);
  return TempDir(std::filesystem::path(pattern));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {

// nftw gives its callback no context: the owner of the tree being walked, for one walk at a time.
thread_local uid_t tree_uid = 0;
thread_local gid_t tree_gid = 0;

int ChownEntry(const char* path, const struct stat*, int, FTW*) {
  return lchown(path, tree_uid, tree_gid) == 0 ? 0 : errno;
}

}  // namespace

Result<void> ChownTree(const std::filesystem::path& tree, uid_t uid, gid_t gid) {
  tree_uid = uid;
  tree_gid = gid;
  int failed = nftw(tree.c_str(), ChownEntry, 32, FTW_PHYS | FTW_MOUNT);
  if (failed != 0)
    return MakeError(ErrorKind::kUnavailable,
                     std::string("cannot give the folder to its user: ") +
                         std::strerror(failed > 0 ? failed : errno),
                     tree);
  return {};
}

}  // namespace berth::sys
