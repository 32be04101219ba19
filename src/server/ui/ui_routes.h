// GET /ui/...: the dashboard. Hashed assets are cached for a year; every other path under /ui/
// is the single page (index.html, never cached) that routes by itself. Every answer carries a
// Content-Security-Policy that allows this origin's scripts, styles and API alone: no inline
// script, no third-party request, no framing.
#pragma once

#include <span>
#include <string_view>

#include "net/http_server.h"
#include "server/ui/ui_assets.h"

namespace berth::server {

inline constexpr std::string_view kUiContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

class UiRoutes {
 public:
  explicit UiRoutes(std::span<const UiAsset> assets = EmbeddedUiAssets()) : assets_(assets) {}

  static bool Serves(std::string_view target);
  net::ServerResponse Handle(const net::ServerRequest& request) const;

 private:
  net::ServerResponse Answer(const net::ServerRequest& request) const;
  const UiAsset* Find(std::string_view path) const;

  std::span<const UiAsset> assets_;
};

}  // namespace berth::server
