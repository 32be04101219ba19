// The dashboard's files as berthd embeds them (generated at build time by ui/embed.mjs from
// the Vite build of ui/): running berthd needs no Node and no files beside its binary.
#pragma once

#include <span>
#include <string_view>

namespace berth::server {

struct UiAsset {
  std::string_view path;          // "/ui/index.html", "/ui/assets/index-<hash>.js"
  std::string_view content_type;  // with its charset
  std::string_view body;
  std::string_view gzip;  // body, gzipped (sent to a client that accepts gzip)
  bool immutable;         // its name holds its content's hash: cached for a year
};

std::span<const UiAsset> EmbeddedUiAssets();

}  // namespace berth::server
