// RFC 4648 section 10 test vectors, both alphabets, and the inputs a strict decoder refuses.
#include "core/base64.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

struct Vector {
  std::string plain;
  std::string standard;
  std::string url;
};

class Base64Vectors : public ::testing::TestWithParam<Vector> {};

TEST_P(Base64Vectors, EncodesAndDecodes) {
  const auto& v = GetParam();
  EXPECT_EQ(Base64Encode(v.plain), v.standard);
  EXPECT_EQ(Base64Encode(v.plain, Base64Alphabet::kUrlNoPadding), v.url);
  auto standard = Base64Decode(v.standard);
  ASSERT_TRUE(standard) << standard.error().message;
  EXPECT_EQ(*standard, v.plain);
  auto url = Base64Decode(v.url, Base64Alphabet::kUrlNoPadding);
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(*url, v.plain);
}

INSTANTIATE_TEST_SUITE_P(
    Rfc4648, Base64Vectors,
    ::testing::Values(Vector{"", "", ""}, Vector{"f", "Zg==", "Zg"}, Vector{"fo", "Zm8=", "Zm8"},
                      Vector{"foo", "Zm9v", "Zm9v"}, Vector{"foob", "Zm9vYg==", "Zm9vYg"},
                      Vector{"fooba", "Zm9vYmE=", "Zm9vYmE"},
                      Vector{"foobar", "Zm9vYmFy", "Zm9vYmFy"}, Vector{"\xfb\xff", "+/8=", "-_8"}));

struct Bad {
  std::string text;
  Base64Alphabet alphabet;
  std::string rule;
};

class Base64Refuses : public ::testing::TestWithParam<Bad> {};

TEST_P(Base64Refuses, WithTheRule) {
  auto r = Base64Decode(GetParam().text, GetParam().alphabet);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(r.error().message.find(GetParam().rule), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Strict, Base64Refuses,
    ::testing::Values(Bad{"Zg=", Base64Alphabet::kStandard, "multiple of 4"},
                      Bad{"Zm9v!A==", Base64Alphabet::kStandard, "outside the alphabet"},
                      Bad{"-_8=", Base64Alphabet::kStandard, "outside the alphabet"},
                      Bad{"+/8", Base64Alphabet::kUrlNoPadding, "outside the alphabet"},
                      Bad{"Zh==", Base64Alphabet::kStandard, "trailing bits"},
                      Bad{"Zm9vY", Base64Alphabet::kUrlNoPadding, "lone symbol"}));

}  // namespace
}  // namespace berth
