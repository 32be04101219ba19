// Extracting a module archive (.tar.gz) safely: entries that would write outside the target,
// links that leave it, devices, and size or entry-count bombs are refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::runner {

struct ArchiveLimits {
  uint64_t max_total_bytes = 512ull << 20;  // uncompressed content
  uint64_t max_entries = 100000;
};

// Reads a POSIX tar stream (ustar, pax and GNU long names) from gzip-compressed bytes and
// writes regular files, folders and safe symbolic links under target. Any refusal is
// kFailedPrecondition with the entry's name; what was written before stays (the caller's
// work folder is throwaway).
Result<void> ExtractModuleArchive(const std::filesystem::path& archive,
                                  const std::filesystem::path& target,
                                  const ArchiveLimits& limits = {});

// The same for bytes in memory (the fuzz target and tests use it).
Result<void> ExtractModuleArchiveBytes(std::string_view gzip_bytes,
                                       const std::filesystem::path& target,
                                       const ArchiveLimits& limits = {});

}  // namespace berth::runner
