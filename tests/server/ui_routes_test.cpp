// The dashboard as berthd serves it: the embedded Vite build (its index page, its hashed
// assets, its size budget), the Content-Security-Policy every answer carries, and what is
// refused.
#include "server/ui/ui_routes.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace berth::server {
namespace {

net::ServerResponse Get(const UiRoutes& ui, const std::string& target,
                        const std::string& accept_encoding = "") {
  net::ServerRequest request{.method = "GET", .target = target};
  if (!accept_encoding.empty()) request.headers["accept-encoding"] = accept_encoding;
  return ui.Handle(request);
}

const UiAsset* Embedded(std::string_view path) {
  for (const UiAsset& asset : EmbeddedUiAssets())
    if (asset.path == path) return &asset;
  return nullptr;
}

TEST(UiRoutes, EveryPageOfTheAppIsTheIndexNeverCachedAndLockedDownByItsPolicy) {
  UiRoutes ui;
  for (const std::string target : {"/ui/", "/ui/login", "/ui/login?x=1", "/ui/anything/else"}) {
    auto response = Get(ui, target);
    EXPECT_EQ(response.status, 200) << target;
    EXPECT_EQ(response.headers["Content-Type"], "text/html; charset=utf-8") << target;
    EXPECT_EQ(response.headers["Cache-Control"], "no-cache") << target;
    EXPECT_EQ(response.headers["Content-Security-Policy"], kUiContentSecurityPolicy) << target;
    EXPECT_EQ(response.headers["X-Frame-Options"], "DENY");
    EXPECT_EQ(response.headers["X-Content-Type-Options"], "nosniff");
    EXPECT_NE(response.body.find("<div id=\"app\">"), std::string::npos) << target;
  }
  EXPECT_EQ(kUiContentSecurityPolicy.find("unsafe"), std::string::npos);
  EXPECT_NE(kUiContentSecurityPolicy.find("frame-ancestors 'none'"), std::string::npos);
}

// What the policy forbids must not be in the page: an inline script or style would be blocked
// in the browser, and every asset the page names must be embedded, hashed and long-cached.
TEST(UiRoutes, TheIndexNamesOnlyEmbeddedHashedAssetsAndHasNothingInline) {
  const UiAsset* index = Embedded("/ui/index.html");
  ASSERT_NE(index, nullptr);
  std::string html(index->body);
  EXPECT_EQ(html.find("style="), std::string::npos);
  EXPECT_EQ(html.find("<style"), std::string::npos);
  std::regex script_tag("<script([^>]*)>");
  int scripts = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), script_tag), end; it != end; ++it) {
    EXPECT_NE((*it)[1].str().find("src=\"/ui/assets/"), std::string::npos) << it->str();
    ++scripts;
  }
  EXPECT_EQ(scripts, 1);
  std::regex reference("(?:src|href)=\"(/ui/[^\"]+)\"");
  int references = 0;
  UiRoutes ui;
  for (std::sregex_iterator it(html.begin(), html.end(), reference), end; it != end; ++it) {
    std::string path = (*it)[1];
    const UiAsset* asset = Embedded(path);
    ASSERT_NE(asset, nullptr) << path;
    EXPECT_TRUE(asset->immutable) << path;
    EXPECT_TRUE(std::regex_search(path, std::regex("-[A-Za-z0-9_-]{8}\\.(js|css|svg)$"))) << path;
    auto response = Get(ui, path);
    EXPECT_EQ(response.status, 200) << path;
    EXPECT_EQ(response.headers["Cache-Control"], "public, max-age=31536000, immutable");
    EXPECT_EQ(response.body, asset->body);
    ++references;
  }
  EXPECT_GE(references, 2);  // the script and the style sheet
}

TEST(UiRoutes, TheJavaScriptShippedIsUnder200KiBGzipped) {
  size_t gzipped = 0;
  for (const UiAsset& asset : EmbeddedUiAssets()) {
    if (asset.path.ends_with(".js")) gzipped += asset.gzip.size();
    EXPECT_LT(asset.gzip.size(), asset.body.size() + 64) << asset.path;
  }
  EXPECT_GT(gzipped, 0u);
  EXPECT_LT(gzipped, size_t{200} << 10);
  RecordProperty("javascript_gzip_bytes", static_cast<int>(gzipped));
}

TEST(UiRoutes, GzipIsSentOnlyToAClientThatAcceptsIt) {
  const UiAsset assets[] = {
      {"/ui/index.html", "text/html; charset=utf-8", "<html>", "GZ-HTML", false},
      {"/ui/assets/app-abcdefgh.js", "text/javascript; charset=utf-8", "js", "GZ-JS", true}};
  UiRoutes ui(assets);
  auto plain = Get(ui, "/ui/assets/app-abcdefgh.js");
  EXPECT_EQ(plain.body, "js");
  EXPECT_FALSE(plain.headers.contains("Content-Encoding"));
  EXPECT_EQ(plain.headers["Vary"], "Accept-Encoding");
  for (const std::string accepts : {"gzip", "br, gzip;q=0.8", "deflate, *"}) {
    auto gzipped = Get(ui, "/ui/assets/app-abcdefgh.js", accepts);
    EXPECT_EQ(gzipped.body, "GZ-JS") << accepts;
    EXPECT_EQ(gzipped.headers["Content-Encoding"], "gzip") << accepts;
  }
  for (const std::string refuses : {"gzip;q=0", "gzip; q=0.0, br", "br", "x-gzipish"}) {
    auto response = Get(ui, "/ui/", refuses);
    EXPECT_EQ(response.body, "<html>") << refuses;
    EXPECT_FALSE(response.headers.contains("Content-Encoding")) << refuses;
  }
}

TEST(UiRoutes, WhatIsNotAFileOfTheDashboardIsRefusedNeverTheIndexInstead) {
  UiRoutes ui;
  for (const std::string target : {"/ui/assets/missing-abcdefgh.js", "/ui/../etc/passwd",
                                   "/ui/assets/../../berthd.db", "/ui/favicon.ico"}) {
    auto response = Get(ui, target);
    EXPECT_EQ(response.status, 404) << target;
    EXPECT_EQ(response.headers["Content-Security-Policy"], kUiContentSecurityPolicy) << target;
    EXPECT_EQ(response.headers["Cache-Control"], "no-store") << target;
  }
  net::ServerRequest post{.method = "POST", .target = "/ui/", .body = "x"};
  auto refused = ui.Handle(post);
  EXPECT_EQ(refused.status, 405);
  EXPECT_EQ(refused.headers["Allow"], "GET, HEAD");
  auto moved = Get(ui, "/ui");
  EXPECT_EQ(moved.status, 308);
  EXPECT_EQ(moved.headers["Location"], "/ui/");
}

TEST(UiRoutes, ServesItsOwnPrefixAlone) {
  EXPECT_TRUE(UiRoutes::Serves("/ui"));
  EXPECT_TRUE(UiRoutes::Serves("/ui/"));
  EXPECT_TRUE(UiRoutes::Serves("/ui?x=1"));
  EXPECT_TRUE(UiRoutes::Serves("/ui/assets/a.js"));
  EXPECT_FALSE(UiRoutes::Serves("/uix"));
  EXPECT_FALSE(UiRoutes::Serves("/orgs/o/ui/"));
  EXPECT_FALSE(UiRoutes::Serves("/"));
}

}  // namespace
}  // namespace berth::server
