// The parts of an http(s) URL that say where it connects.
#include "core/http_url.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(PercentEncoded, KeepsUnreservedCharactersAndEscapesEveryOtherByte) {
  EXPECT_EQ(PercentEncoded("aZ9-._~"), "aZ9-._~");
  EXPECT_EQ(PercentEncoded("arn:aws:iam::1:role/a b+c=&"),
            "arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fa%20b%2Bc%3D%26");
  EXPECT_EQ(PercentEncoded("\xc3\xa9\n"), "%C3%A9%0A");
}

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
