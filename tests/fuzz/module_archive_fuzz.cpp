// libFuzzer target: the module archive reader on any tar stream (gzip-wrapped here so that
// the fuzzer works on tar structure, not on deflate). It must refuse or extract, never crash,
// and never write outside its target folder.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runner/module_archive.h"

namespace {

std::string GzipStored(const uint8_t* data, size_t size) {
  z_stream z{};
  deflateInit2(&z, 0, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, size) + 64, '\0');
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path kRoot = [] {
    char pattern[] = "/tmp/berth-archive-fuzz-XXXXXX";
    return fs::path(mkdtemp(pattern));
  }();
  const fs::path target = kRoot / "target";
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::create_directories(target);
  (void)berth::runner::ExtractModuleArchiveBytes(
      GzipStored(data, size), target,
      berth::runner::ArchiveLimits{.max_total_bytes = 1 << 20, .max_entries = 1000});
  for (const auto& entry : fs::directory_iterator(kRoot)) {
    if (entry.path() != target) std::abort();  // something escaped the target
  }
  return 0;
}
