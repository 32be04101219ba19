// https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT (sections 4.3.7, 4.3.12, 4.3.16)
#include "core/zip_entry.h"

#include <zlib.h>

#include "core/inflate.h"

namespace berth {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndOfDirectorySize = 22, kDirectoryEntrySize = 46, kLocalHeaderSize = 30;

Error NotZip(const std::string& rule) {
  return MakeError(ErrorKind::kFailedPrecondition, "zip file: " + rule);
}

// Little-endian integers at an offset the caller has bounds-checked.
uint32_t At(std::string_view data, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = width; i-- > 0;)
    value = value << 8 | static_cast<unsigned char>(data[offset + i]);
  return value;
}

Result<size_t> FindEndOfDirectory(std::string_view zip) {
  if (zip.size() < kEndOfDirectorySize) return NotZip("shorter than its end record");
  // The end record closes the file, followed only by a comment of at most 65535 bytes.
  size_t lowest =
      zip.size() > kEndOfDirectorySize + 65535 ? zip.size() - kEndOfDirectorySize - 65535 : 0;
  for (size_t at = zip.size() - kEndOfDirectorySize + 1; at-- > lowest;) {
    if (At(zip, at, 4) == kEndOfDirectory) return at;
  }
  return NotZip("no end of central directory record");
}

}  // namespace

Result<std::string> ReadZipEntry(std::string_view zip, std::string_view name, uint64_t max_bytes) {
  auto end = FindEndOfDirectory(zip);
  if (!end) return end.error();
  size_t entries = At(zip, *end + 10, 2);
  size_t at = At(zip, *end + 16, 4);
  for (size_t i = 0; i < entries; ++i) {
    if (at > zip.size() || zip.size() - at < kDirectoryEntrySize ||
        At(zip, at, 4) != kDirectoryEntry)
      return NotZip("central directory entry " + std::to_string(i) + " is malformed");
    size_t name_length = At(zip, at + 28, 2);
    size_t skipped = name_length + At(zip, at + 30, 2) + At(zip, at + 32, 2);
    if (zip.size() - at - kDirectoryEntrySize < skipped)
      return NotZip("central directory entry " + std::to_string(i) + " runs past the end");
    if (zip.substr(at + kDirectoryEntrySize, name_length) != name) {
      at += kDirectoryEntrySize + skipped;
      continue;
    }
    uint32_t method = At(zip, at + 10, 2), crc = At(zip, at + 16, 4);
    uint32_t compressed = At(zip, at + 20, 4), size = At(zip, at + 24, 4);
    size_t local = At(zip, at + 42, 4);
    std::string entry(name);
    if (compressed == UINT32_MAX || size == UINT32_MAX)
      return NotZip(entry + ": ZIP64 is not read");
    if (size > max_bytes)
      return NotZip(entry + ": more than " + std::to_string(max_bytes) + " bytes");
    if (local > zip.size() || zip.size() - local < kLocalHeaderSize ||
        At(zip, local, 4) != kLocalHeader)
      return NotZip(entry + ": local header is malformed");
    size_t data = local + kLocalHeaderSize + At(zip, local + 26, 2) + At(zip, local + 28, 2);
    if (data > zip.size() || zip.size() - data < compressed)
      return NotZip(entry + ": data runs past the end");
    std::string_view raw = zip.substr(data, compressed);
    std::string content;
    if (method == 0) {
      content = raw;
    } else if (method == 8) {
      auto inflated = Inflate(raw, Compression::kRawDeflate, size);
      if (!inflated) return NotZip(entry + ": " + inflated.error().message);
      content = std::move(*inflated);
    } else {
      return NotZip(entry + ": compression method " + std::to_string(method) + " is not read");
    }
    if (content.size() != size) return NotZip(entry + ": not the size its directory entry says");
    auto actual =
        crc32(0, reinterpret_cast<const Bytef*>(content.data()), static_cast<uInt>(content.size()));
    if (actual != crc) return NotZip(entry + ": CRC-32 does not match");
    return content;
  }
  return MakeError(ErrorKind::kNotFound, "zip file: no entry " + std::string(name));
}

}  // namespace berth
