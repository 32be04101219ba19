// The OCI image layouts scripts/images writes, as the tests read them.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"

namespace berth::testenv {

// Where the layouts are: BERTH_IMAGES_DIR, else build/images in the source tree.
std::filesystem::path ImagesDir();

// A layout's one manifest (scripts/images tags each image once).
struct LayoutManifest {
  std::string tag;     // org.opencontainers.image.ref.name: berth's version
  std::string digest;  // sha256:... of the manifest
};
Result<LayoutManifest> ReadLayoutManifest(const std::filesystem::path& layout);

}  // namespace berth::testenv
