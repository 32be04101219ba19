#include "plan_file_builder.h"

#include <zlib.h>

#include "tar_builder.h"

namespace berth::tf::testing {
namespace {

std::string VarintBytes(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
  return out;
}

std::string Little(uint64_t value, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

}  // namespace

std::string Varint(uint32_t number, uint64_t value) {
  return VarintBytes(uint64_t{number} << 3) + VarintBytes(value);
}

std::string Bytes(uint32_t number, std::string_view bytes) {
  return VarintBytes(uint64_t{number} << 3 | 2) + VarintBytes(bytes.size()) + std::string(bytes);
}

std::string Zip(const std::vector<ZipEntrySpec>& entries) {
  std::string out, directory;
  for (const auto& e : entries) {
    std::string data = e.deflate ? berth::testing::RawDeflate(e.content) : e.content;
    uint64_t crc = crc32(0, reinterpret_cast<const Bytef*>(e.content.data()),
                         static_cast<uInt>(e.content.size()));
    uint64_t size =
        e.declared_size >= 0 ? static_cast<uint64_t>(e.declared_size) : e.content.size();
    uint64_t method = e.deflate ? 8 : 0;
    size_t local = out.size();
    out += Little(0x04034b50, 4) + Little(20, 2) + Little(8, 2) + Little(method, 2) + Little(0, 4) +
           Little(0, 4) + Little(0, 4) + Little(0, 4) + Little(e.name.size(), 2) + Little(0, 2) +
           e.name + data;
    directory += Little(0x02014b50, 4) + Little(20, 2) + Little(20, 2) + Little(8, 2) +
                 Little(method, 2) + Little(0, 4) + Little(crc, 4) + Little(data.size(), 4) +
                 Little(size, 4) + Little(e.name.size(), 2) + Little(0, 2) + Little(0, 2) +
                 Little(0, 2) + Little(0, 2) + Little(0, 4) + Little(local, 4) + e.name;
  }
  size_t directory_at = out.size();
  out += directory;
  out += Little(0x06054b50, 4) + Little(0, 4) + Little(entries.size(), 2) +
         Little(entries.size(), 2) + Little(directory.size(), 4) + Little(directory_at, 4) +
         Little(0, 2);
  return out;
}

std::string PlanFile(const std::vector<std::string>& resource_changes, uint64_t version) {
  std::string plan = Varint(1, version);
  for (const auto& change : resource_changes) plan += Bytes(3, change);
  return Zip({{.name = "tfplan", .content = plan}, {.name = "tfstate", .content = "{}"}});
}

std::string ResourceChange(std::string_view address, uint64_t action,
                           const std::vector<std::string>& values) {
  std::string change = Varint(1, action);
  for (const auto& value : values) change += Bytes(2, Bytes(1, value));
  return Bytes(13, address) + Bytes(9, change);
}

}  // namespace berth::tf::testing
