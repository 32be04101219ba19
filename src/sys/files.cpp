// File helpers on POSIX calls, so that errors carry errno and the path.
#include "sys/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sys/fd.h"

namespace berth::sys {
namespace {

Error Errno(std::string_view what, const std::filesystem::path& path) {
  return MakeError(ErrorKind::kInternal, std::string(what) + ": " + std::strerror(errno),
                   path.string());
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
  std::string content;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd.Get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
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

}  // namespace berth::sys
