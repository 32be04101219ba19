#include "oci_layout.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "sys/files.h"
#include "test_tools.h"

namespace berth::testenv {

std::filesystem::path ImagesDir() {
  const char* set = std::getenv("BERTH_IMAGES_DIR");
  return set && *set ? std::filesystem::path(set) : SourceDir() / "build/images";
}

Result<LayoutManifest> ReadLayoutManifest(const std::filesystem::path& layout) {
  auto text = sys::ReadFile(layout / "index.json");
  if (!text)
    return MakeError(ErrorKind::kFailedPrecondition,
                     layout.string() + " is not an image layout: run scripts/images");
  auto index = nlohmann::json::parse(*text, nullptr, false);
  if (index.is_discarded() || !index.contains("manifests") || index["manifests"].empty())
    return MakeError(ErrorKind::kInvalidArgument, "an index.json without a manifest",
                     layout.string());
  const nlohmann::json& manifest = index["manifests"][0];
  return LayoutManifest{.tag = manifest.value("annotations", nlohmann::json::object())
                                   .value("org.opencontainers.image.ref.name", ""),
                        .digest = manifest.value("digest", "")};
}

}  // namespace berth::testenv
