// tar (POSIX.1-2001 pax and ustar; GNU 'L'/'K' long names) over zlib. Whole-archive
// decompression in memory is bounded by limits.max_total_bytes.
#include "runner/module_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "core/inflate.h"
#include "sys/fd.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

Error Refused(const std::string& rule, const std::string& entry = {}) {
  return MakeError(ErrorKind::kFailedPrecondition, "module archive refused: " + rule, entry);
}

// A tar numeric field: octal text, or base-256 when the high bit is set.
Result<uint64_t> Number(std::string_view field) {
  if (!field.empty() && (static_cast<unsigned char>(field[0]) & 0x80)) {
    uint64_t v = static_cast<unsigned char>(field[0]) & 0x7f;
    for (size_t i = 1; i < field.size(); ++i) {
      if (v >> 56) return Refused("numeric field overflows");
      v = v << 8 | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < field.size() && (field[i] == ' ' || field[i] == '\0')) ++i;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 60) return Refused("numeric field overflows");
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
  }
  return v;
}

std::string CString(std::string_view field) {
  auto nul = field.find('\0');
  return std::string(field.substr(0, nul));
}

// A relative path with no "..", or an error naming it.
Result<fs::path> SafeRelative(const std::string& name) {
  if (name.empty()) return Refused("empty entry name");
  fs::path p(name);
  if (p.is_absolute()) return Refused("absolute path", name);
  fs::path clean;
  for (const auto& part : p) {
    if (part == "..") return Refused("path with \"..\"", name);
    if (part == "." || part.empty()) continue;
    clean /= part;
  }
  if (clean.empty()) return Refused("entry names no file", name);
  return clean;
}

// A link target must resolve inside the archive: relative, and never climbing above the root.
Result<void> CheckLinkTarget(const fs::path& entry, const std::string& target) {
  if (target.empty()) return Refused("link with no target", entry.string());
  fs::path t(target);
  if (t.is_absolute()) return Refused("link to an absolute path", entry.string());
  int depth = 0;
  for (const auto& part : entry.parent_path()) {
    if (!part.empty() && part != ".") ++depth;
  }
  for (const auto& part : t) {
    if (part == "..") {
      if (--depth < 0) return Refused("link that leaves the module", entry.string());
    } else if (part != "." && !part.empty()) {
      ++depth;
    }
  }
  return {};
}

// pax extended header records: "LEN key=value\n".
std::map<std::string, std::string> ParsePax(std::string_view data) {
  std::map<std::string, std::string> records;
  while (!data.empty()) {
    size_t space = data.find(' ');
    if (space == std::string_view::npos) break;
    size_t len = 0;
    for (size_t i = 0; i < space; ++i) {
      if (data[i] < '0' || data[i] > '9') return records;
      len = len * 10 + static_cast<size_t>(data[i] - '0');
      if (len > data.size()) return records;
    }
    if (len <= space + 1 || len > data.size()) break;
    std::string_view record = data.substr(space + 1, len - space - 2);  // without "\n"
    size_t eq = record.find('=');
    if (eq != std::string_view::npos) {
      records[std::string(record.substr(0, eq))] = std::string(record.substr(eq + 1));
    }
    data.remove_prefix(len);
  }
  return records;
}

// Refuses to write through a symbolic link the archive made earlier.
Result<void> CheckNoLinkOnTheWay(const fs::path& target, const fs::path& relative) {
  fs::path at = target;
  for (const auto& part : relative.parent_path()) {
    at /= part;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(at, ec))) {
      return Refused("entry below a symbolic link", relative.string());
    }
  }
  return {};
}

Result<void> WriteEntryFile(const fs::path& path, std::string_view content, uint64_t mode) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (fs::is_symlink(fs::symlink_status(path, ec))) fs::remove(path, ec);
  // Only the permission bits that matter: no setuid, setgid or sticky bits.
  mode_t perms = (mode & 0100) ? 0755 : 0644;
  sys::Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, perms));
  if (!fd) return Refused(std::string("cannot write: ") + std::strerror(errno), path.string());
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd.Get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Refused(std::string("cannot write: ") + std::strerror(errno), path.string());
    done += static_cast<size_t>(n);
  }
  fchmod(fd.Get(), perms);
  return {};
}

}  // namespace

Result<void> ExtractModuleArchiveBytes(std::string_view gzip_bytes, const fs::path& target,
                                       const ArchiveLimits& limits) {
  // Tar headers and padding cost at most ~1 KiB per entry on top of the content.
  auto tar = Inflate(gzip_bytes, Compression::kGzip,
                     limits.max_total_bytes + limits.max_entries * 1024 + 1024);
  if (!tar) return Refused(tar.error().message);
  std::string_view rest = *tar;
  uint64_t entries = 0, total = 0;
  std::string long_name, long_link;
  std::map<std::string, std::string> pax;

  while (rest.size() >= 512) {
    std::string_view header = rest.substr(0, 512);
    if (header.find_first_not_of('\0') == std::string_view::npos) break;  // end of archive
    // The checksum (POSIX ustar): the header's bytes summed with the checksum field as spaces.
    auto stored = Number(header.substr(148, 8));
    if (!stored) return stored.error();
    uint64_t sum = 0;
    for (size_t i = 0; i < 512; ++i) {
      sum += (i >= 148 && i < 156) ? uint64_t{32} : static_cast<unsigned char>(header[i]);
    }
    if (sum != *stored) return Refused("bad header checksum");
    auto size = Number(header.substr(124, 12));
    if (!size) return size.error();
    auto mode = Number(header.substr(100, 8));
    if (!mode) return mode.error();
    uint64_t padded = (*size + 511) / 512 * 512;
    if (padded > rest.size() - 512) return Refused("entry runs past the end of the archive");
    std::string_view content = rest.substr(512, *size);
    rest.remove_prefix(512 + padded);
    char type = header[156];

    if (++entries > limits.max_entries) {
      return Refused("more than " + std::to_string(limits.max_entries) + " entries");
    }
    if (type == 'x' || type == 'g') {  // pax header: applies to the next entry (g: ignored)
      if (type == 'x') pax = ParsePax(content);
      continue;
    }
    if (type == 'L') {
      long_name = CString(content);
      continue;
    }
    if (type == 'K') {
      long_link = CString(content);
      continue;
    }

    std::string name = CString(header.substr(0, 100));
    std::string prefix = CString(header.substr(345, 155));
    if (header.substr(257, 5) == "ustar" && !prefix.empty()) name = prefix + "/" + name;
    if (!long_name.empty()) name = long_name;
    if (pax.count("path")) name = pax["path"];
    std::string link = CString(header.substr(157, 100));
    if (!long_link.empty()) link = long_link;
    if (pax.count("linkpath")) link = pax["linkpath"];
    long_name.clear();
    long_link.clear();
    pax.clear();

    auto relative = SafeRelative(name);
    if (!relative) return relative.error();
    if (auto ok = CheckNoLinkOnTheWay(target, *relative); !ok) return ok.error();
    fs::path path = target / *relative;
    std::error_code ec;
    switch (type) {
      case '0':
      case '\0':
      case '7':
        total += *size;
        if (total > limits.max_total_bytes) {
          return Refused("more than " + std::to_string(limits.max_total_bytes) +
                         " bytes of content");
        }
        if (auto ok = WriteEntryFile(path, content, *mode); !ok) return ok.error();
        break;
      case '5':
        fs::create_directories(path, ec);
        if (ec) return Refused("cannot create folder: " + ec.message(), name);
        break;
      case '2':
        if (auto ok = CheckLinkTarget(*relative, link); !ok) return ok.error();
        fs::create_directories(path.parent_path(), ec);
        fs::remove(path, ec);
        fs::create_symlink(link, path, ec);
        if (ec) return Refused("cannot create link: " + ec.message(), name);
        break;
      case '1':
        return Refused("hard links are not supported", name);
      case '3':
      case '4':
        return Refused("device files are not allowed", name);
      case '6':
        return Refused("FIFOs are not allowed", name);
      default:
        return Refused(std::string("unknown entry type '") + type + "'", name);
    }
  }
  return {};
}

Result<void> ExtractModuleArchive(const fs::path& archive, const fs::path& target,
                                  const ArchiveLimits& limits) {
  auto bytes = sys::ReadFile(archive);
  if (!bytes) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "--module: cannot read the archive: " + bytes.error().message,
                     archive.string());
  }
  return ExtractModuleArchiveBytes(*bytes, target, limits);
}

}  // namespace berth::runner
