// ustar headers written field by field.
#include "tar_builder.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace berth::testing {
namespace {

void Octal(char* field, size_t width, uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
}

}  // namespace

void TarBuilder::Entry(const std::string& name, char type, const std::string& content,
                       const std::string& link, uint32_t mode) {
  char h[512] = {};
  std::strncpy(h, name.c_str(), 100);
  Octal(h + 100, 8, mode);
  Octal(h + 108, 8, 0);
  Octal(h + 116, 8, 0);
  Octal(h + 124, 12, content.size());
  Octal(h + 136, 12, 0);
  h[156] = type;
  std::strncpy(h + 157, link.c_str(), 100);
  std::copy_n("ustar", 6, h + 257);  // the magic and its NUL
  h[263] = h[264] = '0';             // version "00", no NUL
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(h + 148, 8, "%06o", sum);
  data_.append(h, 512);
  data_.append(content);
  data_.append((512 - content.size() % 512) % 512, '\0');
}

TarBuilder& TarBuilder::File(const std::string& name, const std::string& content, uint32_t mode) {
  Entry(name, '0', content, {}, mode);
  return *this;
}
TarBuilder& TarBuilder::Dir(const std::string& name) {
  Entry(name, '5', "", {}, 0755);
  return *this;
}
TarBuilder& TarBuilder::Symlink(const std::string& name, const std::string& target) {
  Entry(name, '2', "", target);
  return *this;
}
TarBuilder& TarBuilder::Hardlink(const std::string& name, const std::string& target) {
  Entry(name, '1', "", target);
  return *this;
}
TarBuilder& TarBuilder::Device(const std::string& name) {
  Entry(name, '3', "");
  return *this;
}
TarBuilder& TarBuilder::Fifo(const std::string& name) {
  Entry(name, '6', "");
  return *this;
}
TarBuilder& TarBuilder::PaxPath(const std::string& long_name, const std::string& content) {
  std::string record = " path=" + long_name + "\n";
  size_t len = record.size();
  len += std::to_string(len + std::to_string(len).size()).size();
  Entry("PaxHeader", 'x', std::to_string(len) + record);
  Entry("short-placeholder", '0', content);
  return *this;
}
TarBuilder& TarBuilder::ZeroFile(const std::string& name, uint64_t size) {
  Entry(name, '0', std::string(size, '\0'));
  return *this;
}

std::string TarBuilder::Tar() const { return data_ + std::string(1024, '\0'); }
std::string TarBuilder::TarGz() const { return Gzip(Tar()); }

namespace {

std::string Deflate(const std::string& data, int level, int window_bits) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

std::string Gzip(const std::string& data, int level) {
  return Deflate(data, level, 16 + MAX_WBITS);
}
std::string RawDeflate(const std::string& data) { return Deflate(data, 9, -MAX_WBITS); }

}  // namespace berth::testing
