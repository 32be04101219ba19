// Builds tar.gz archives in memory for tests, including hostile ones that no well-behaved
// tool would produce (absolute names, "..", escaping links, devices, bombs).
#pragma once

#include <cstdint>
#include <string>

namespace berth::testing {

class TarBuilder {
 public:
  TarBuilder& File(const std::string& name, const std::string& content, uint32_t mode = 0644);
  TarBuilder& Dir(const std::string& name);
  TarBuilder& Symlink(const std::string& name, const std::string& target);
  TarBuilder& Hardlink(const std::string& name, const std::string& target);
  TarBuilder& Device(const std::string& name);  // a character device
  TarBuilder& Fifo(const std::string& name);
  TarBuilder& PaxPath(const std::string& long_name, const std::string& content);
  // An entry that claims size bytes of zeroes (compresses to almost nothing).
  TarBuilder& ZeroFile(const std::string& name, uint64_t size);

  std::string Tar() const;    // with the two zero blocks at the end
  std::string TarGz() const;  // gzip of Tar()

 private:
  void Entry(const std::string& name, char type, const std::string& content,
             const std::string& link = {}, uint32_t mode = 0644);
  std::string data_;
};

// level 0 stores without compressing (fast, for the fuzzer); 9 compresses best.
std::string Gzip(const std::string& data, int level = 9);
// A raw deflate stream (what a zip entry holds).
std::string RawDeflate(const std::string& data);

}  // namespace berth::testing
