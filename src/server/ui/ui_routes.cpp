#include "server/ui/ui_routes.h"

#include <string>

namespace berth::server {
namespace {

constexpr std::string_view kPrefix = "/ui/";

void Harden(net::ServerResponse& response) {
  response.headers["Content-Security-Policy"] = std::string(kUiContentSecurityPolicy);
  response.headers["X-Content-Type-Options"] = "nosniff";
  response.headers["X-Frame-Options"] = "DENY";
  response.headers["Referrer-Policy"] = "no-referrer";
  response.headers["Cross-Origin-Opener-Policy"] = "same-origin";
  response.headers["Cross-Origin-Resource-Policy"] = "same-origin";
}

net::ServerResponse Plain(int status, std::string text) {
  net::ServerResponse response{.status = status, .body = std::move(text) + "\n"};
  response.headers["Content-Type"] = "text/plain; charset=utf-8";
  response.headers["Cache-Control"] = "no-store";
  return response;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Accept-Encoding names gzip (or *) without refusing it by q=0.
bool AcceptsGzip(const net::ServerRequest& request) {
  auto it = request.headers.find("accept-encoding");
  if (it == request.headers.end()) return false;
  std::string_view rest = it->second;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t semicolon = item.find(';');
    std::string_view coding = Trim(item.substr(0, semicolon));
    if (coding != "gzip" && coding != "*") continue;
    if (semicolon == std::string_view::npos) return true;
    std::string_view q = Trim(item.substr(semicolon + 1));
    return !(q.starts_with("q=0") && q.find_first_not_of("q=0.") == std::string_view::npos);
  }
  return false;
}

}  // namespace

bool UiRoutes::Serves(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  return path == "/ui" || path.starts_with(kPrefix);
}

const UiAsset* UiRoutes::Find(std::string_view path) const {
  for (const UiAsset& asset : assets_)
    if (asset.path == path) return &asset;
  return nullptr;
}

net::ServerResponse UiRoutes::Handle(const net::ServerRequest& request) const {
  net::ServerResponse response = Answer(request);
  response.route = "/ui/";
  Harden(response);
  return response;
}

net::ServerResponse UiRoutes::Answer(const net::ServerRequest& request) const {
  std::string_view path = std::string_view(request.target).substr(0, request.target.find('?'));
  if (request.method != "GET" && request.method != "HEAD") {
    net::ServerResponse refused = Plain(405, "the dashboard is read with GET");
    refused.headers["Allow"] = "GET, HEAD";
    return refused;
  }
  if (path == "/ui") {
    net::ServerResponse moved = Plain(308, "the dashboard is at /ui/");
    moved.headers["Location"] = "/ui/";
    return moved;
  }
  const UiAsset* asset = Find(path);
  // A page of the app (/ui/, /ui/login) is index.html; a missing file is 404, not the page,
  // so that a stale script reference fails plainly.
  if (!asset && path.substr(kPrefix.size()).find('.') == std::string_view::npos)
    asset = Find("/ui/index.html");
  if (!asset) return Plain(404, "no such file in the dashboard");
  net::ServerResponse response;
  response.headers["Content-Type"] = std::string(asset->content_type);
  response.headers["Cache-Control"] =
      asset->immutable ? "public, max-age=31536000, immutable" : "no-cache";
  response.headers["Vary"] = "Accept-Encoding";
  if (AcceptsGzip(request)) {
    response.headers["Content-Encoding"] = "gzip";
    response.body = std::string(asset->gzip);
  } else {
    response.body = std::string(asset->body);
  }
  return response;
}

}  // namespace berth::server
