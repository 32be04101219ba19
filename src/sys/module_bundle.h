// A module folder as the bundle berthd stores and runners unpack: a gzip-compressed POSIX tar
// (ustar) of its files, folders and symbolic links, in name order with fixed owners and times,
// so that the same folder always packs to the same bytes (and so the same bundle id). TF's and
// git's own folders and local state files are left out: they are not the module.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"

namespace berth::sys {

Result<std::string> PackModule(const std::filesystem::path& folder);

}  // namespace berth::sys
