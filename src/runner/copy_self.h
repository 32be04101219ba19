// `runner copy <dest>`: places this very executable at dest, mode 0755.
#pragma once

#include <filesystem>

#include "core/error.h"

namespace berth::runner {

// Reads /proc/self/exe (the running file, whatever argv[0] says) and renames a full copy over
// dest, so that a second copy while the first is running never meets "text file busy".
Result<void> CopySelf(const std::filesystem::path& dest);

}  // namespace berth::runner
