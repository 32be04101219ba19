// zlib: decompression with an output cap, checked as the output grows so that a bomb stops
// early (gzip files of several members in a row, and the raw deflate streams of zip entries),
// and gzip compression.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

enum class Compression { kGzip, kRawDeflate };

// kFailedPrecondition when the data is not valid, ends early, or inflates past max_bytes.
Result<std::string> Inflate(std::string_view data, Compression format, uint64_t max_bytes);

// Bundles are packed once and kept (smallest); states are written at every change (fast).
enum class GzipLevel { kFast, kSmallest };
Result<std::string> Gzip(std::string_view data, GzipLevel level);

}  // namespace berth
