// libFuzzer target: the module archive reader on any tar stream (gzip-wrapped here so that
// the fuzzer works on tar structure, not on deflate). It must refuse or extract, never crash,
// and never write outside its target folder.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runner/module_archive.h"
#include "sys/files.h"
#include "tar_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // Removed when the fuzzer exits.
  static const berth::sys::TempDir kRootDir =
      berth::sys::TempDir::Create("berth-archive-fuzz").value();
  const fs::path& root = kRootDir.Path();
  const fs::path target = root / "target";
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::create_directories(target);
  (void)berth::runner::ExtractModuleArchiveBytes(
      berth::testing::Gzip(std::string(reinterpret_cast<const char*>(data), size), 0), target,
      berth::runner::ArchiveLimits{.max_total_bytes = 1 << 20, .max_entries = 1000});
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.path() != target) std::abort();  // something escaped the target
  }
  return 0;
}
