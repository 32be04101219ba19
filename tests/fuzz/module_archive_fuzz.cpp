// libFuzzer target: the module archive reader on any tar stream (gzip-wrapped here so that
// the fuzzer works on tar structure, not on deflate). It must refuse or extract, never crash,
// and never write outside its target folder.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runner/module_archive.h"
#include "tar_builder.h"

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
      berth::testing::Gzip(std::string(reinterpret_cast<const char*>(data), size), 0), target,
      berth::runner::ArchiveLimits{.max_total_bytes = 1 << 20, .max_entries = 1000});
  for (const auto& entry : fs::directory_iterator(kRoot)) {
    if (entry.path() != target) std::abort();  // something escaped the target
  }
  return 0;
}
