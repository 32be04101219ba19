#include "sys/module_bundle.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/inflate.h"
#include "sys/files.h"

namespace berth::sys {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBlock = 512;

bool LeftOut(const fs::path& relative) {
  for (const auto& part : relative) {
    std::string name = part.string();
    if (name == ".terraform" || name == ".git") return true;
  }
  std::string file = relative.filename().string();
  return file.starts_with("terraform.tfstate") || file.ends_with(".tfstate") ||
         file.ends_with(".tfstate.backup");
}

void Octal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0 && value > 0; value >>= 3) digits[i] = char('0' + (value & 7));
  std::memcpy(field, digits.c_str(), width);  // with its NUL
}

// One ustar header; names beyond 100 bytes are split into prefix and name at a '/'.
Result<std::string> Header(const std::string& name, char type, uint64_t size, unsigned mode,
                           const std::string& link) {
  std::string header(kBlock, '\0');
  std::string prefix, base = name;
  if (base.size() > 100) {
    // The last '/' that leaves a prefix of at most 155 bytes; an earlier one would only make
    // the name longer.
    size_t slash = name.rfind('/', 155);
    if (slash == std::string::npos || name.size() - slash - 1 > 100)
      return MakeError(ErrorKind::kInvalidArgument, "path too long for a bundle", name);
    prefix = name.substr(0, slash);
    base = name.substr(slash + 1);
  }
  if (link.size() > 100)
    return MakeError(ErrorKind::kInvalidArgument, "link target too long for a bundle", name);
  std::memcpy(&header[0], base.data(), base.size());
  Octal(&header[100], 8, mode);
  Octal(&header[108], 8, 0);
  Octal(&header[116], 8, 0);
  Octal(&header[124], 12, size);
  Octal(&header[136], 12, 0);
  header[156] = type;
  std::memcpy(&header[157], link.data(), link.size());
  std::memcpy(&header[257], "ustar", 6);
  std::memcpy(&header[263], "00", 2);
  std::memcpy(&header[345], prefix.data(), prefix.size());
  std::memset(&header[148], ' ', 8);
  unsigned sum = 0;
  for (char c : header) sum += static_cast<unsigned char>(c);
  Octal(&header[148], 7, sum);
  header[155] = ' ';
  return header;
}

}  // namespace

Result<std::string> PackModule(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    return MakeError(ErrorKind::kInvalidArgument, "not a module folder", folder.string());
  std::vector<fs::path> entries;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    fs::path relative = fs::relative(it->path(), folder);
    if (LeftOut(relative)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    entries.push_back(relative);
  }
  if (ec)
    return MakeError(ErrorKind::kUnavailable,
                     "cannot read " + folder.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end());
  std::string tar;
  for (const fs::path& relative : entries) {
    fs::path full = folder / relative;
    auto status = fs::symlink_status(full, ec);
    std::string name = relative.generic_string();
    Result<std::string> header = std::string();
    std::string content;
    if (fs::is_symlink(status)) {
      header = Header(name, '2', 0, 0777, fs::read_symlink(full, ec).generic_string());
    } else if (fs::is_directory(status)) {
      header = Header(name + "/", '5', 0, 0755, "");
    } else if (fs::is_regular_file(status)) {
      auto read = sys::ReadFile(full);
      if (!read) return read.error();
      content = std::move(*read);
      bool executable = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
      header = Header(name, '0', content.size(), executable ? 0755 : 0644, "");
    } else {
      continue;  // sockets, devices: not part of a module
    }
    if (!header) return header.error();
    tar += *header;
    tar += content;
    tar.append((kBlock - content.size() % kBlock) % kBlock, '\0');
  }
  tar.append(2 * kBlock, '\0');
  return Gzip(tar, GzipLevel::kSmallest);
}

}  // namespace berth::sys
