// --file-mapping: files copied into the home folder or the folder TF runs in before TF starts
// (berth-controller's spec.fileMappings: credentials files from Secrets).
#pragma once

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "runner/options.h"

namespace berth::runner {

// Copies each mapping's file to its path (mode 0600; missing folders made 0700). The module is
// hostile: no part of the way is followed if it is a symbolic link, so a link in the module
// cannot send a credential elsewhere. Errors name the mapping.
Result<void> PlaceMappedFiles(const std::vector<FileMapping>& mappings,
                              const std::filesystem::path& home,
                              const std::filesystem::path& workspace);

}  // namespace berth::runner
