// One named entry of a zip file in memory, found through the central directory (writers that
// stream, such as Go's, leave the sizes out of the local headers), inflated with a cap and
// checked against its CRC-32. No ZIP64: an entry or archive past 4 GiB is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

// kNotFound when the archive has no such entry; kFailedPrecondition when it is not a zip file
// this reads, the entry is malformed, or it inflates past max_bytes.
Result<std::string> ReadZipEntry(std::string_view zip, std::string_view name, uint64_t max_bytes);

}  // namespace berth
