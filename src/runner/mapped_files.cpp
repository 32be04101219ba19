#include "runner/mapped_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/fd.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

Error Refused(const FileMapping& mapping, const std::string& why) {
  return MakeError(ErrorKind::kFailedPrecondition,
                   "--file-mapping " + mapping.location + ":" + mapping.path + ": " + why);
}

Result<void> WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError(ErrorKind::kInternal, std::strerror(errno));
    content.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// The folder it was written in, open, and its name there.
Result<std::pair<sys::Fd, std::string>> Place(const FileMapping& mapping, const fs::path& base) {
  auto content = sys::ReadFile(mapping.file);
  if (!content) return Refused(mapping, content.error().message);
  std::error_code made;
  fs::create_directories(base, made);
  sys::Fd dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Refused(mapping, "cannot open " + base.string());
  const fs::path relative(mapping.path);
  for (const auto& part : relative.parent_path()) {
    if (part.empty() || part == ".") continue;
    if (::mkdirat(dir.Get(), part.c_str(), 0700) != 0 && errno != EEXIST)
      return Refused(mapping, std::string("cannot make a folder: ") + std::strerror(errno));
    sys::Fd next(
        ::openat(dir.Get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return Refused(mapping, part.string() + " is a symbolic link or not a folder");
    dir = std::move(next);
  }
  const std::string name = relative.filename().string();
  sys::Fd file(::openat(dir.Get(), name.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file) return Refused(mapping, std::string("cannot write: ") + std::strerror(errno));
  ::fchmod(file.Get(), 0600);
  if (auto written = WriteAll(file.Get(), *content); !written)
    return Refused(mapping, written.error().message);
  return std::pair{std::move(dir), name};
}

}  // namespace

MappedHomeFiles::~MappedHomeFiles() {
  for (const auto& [dir, name] : placed_) ::unlinkat(dir.Get(), name.c_str(), 0);
}

Result<MappedHomeFiles> PlaceMappedFiles(const std::vector<FileMapping>& mappings,
                                         const fs::path& home, const fs::path& workspace) {
  MappedHomeFiles in_home;
  for (const FileMapping& mapping : mappings) {
    const bool to_home = mapping.location == "home";
    auto placed = Place(mapping, to_home ? home : workspace);
    if (!placed) return placed.error();
    if (to_home) in_home.Add(std::move(placed->first), std::move(placed->second));
  }
  return in_home;
}

}  // namespace berth::runner
