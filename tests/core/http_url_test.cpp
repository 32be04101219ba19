// The parts of an http(s) URL that say where it connects.
#include "core/http_url.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(HttpUrl, ConnectsToSchemeHostAndPort) {
  auto url = HttpUrl::Parse("https://berth.example:8443/state/v1/x?a=1");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "berth.example");
  EXPECT_EQ(url->port, 8443);
  EXPECT_EQ(url->rest, "/state/v1/x?a=1");
  EXPECT_EQ(HttpUrl::Parse("http://[::1]/x")->host, "::1");
  EXPECT_EQ(HttpUrl::Parse("http://[::1]/x")->port, 80) << "the scheme's default";
  EXPECT_EQ(HttpUrl::Parse("https://berth")->port, 443);
  EXPECT_FALSE(HttpUrl::Parse("ftp://berth"));
  EXPECT_FALSE(HttpUrl::Parse("http://berth:99999"));
  EXPECT_FALSE(HttpUrl::Parse("http://berth:8x"));
  EXPECT_FALSE(HttpUrl::Parse("http://user:pw@berth"));
  EXPECT_FALSE(HttpUrl::Parse("http:///x"));
}

}  // namespace
}  // namespace berth
