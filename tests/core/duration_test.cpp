// Go duration syntax, row by row.
#include "core/duration.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

using namespace std::chrono_literals;

struct Valid {
  std::string text;
  Duration expected;
};

class DurationParses : public ::testing::TestWithParam<Valid> {};

TEST_P(DurationParses, ToTheExpectedValue) {
  auto d = ParseDuration(GetParam().text);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(GoSyntax, DurationParses,
                         ::testing::Values(Valid{"0", 0s}, Valid{"5s", 5s}, Valid{"5m", 5min},
                                           Valid{"1h", 1h}, Valid{"300ms", 300ms},
                                           Valid{"1.5h", 90min}, Valid{"2h45m", 165min},
                                           Valid{"1m30s", 90s}, Valid{"+5s", 5s},
                                           Valid{"10us", 10us}, Valid{"10\xc2\xb5s", 10us},
                                           Valid{"7ns", 7ns}, Valid{".5s", 500ms}));

class DurationRefuses : public ::testing::TestWithParam<std::string> {};

TEST_P(DurationRefuses, WithAnInvalidArgument) {
  auto d = ParseDuration(GetParam());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(d.error().message.find(GetParam()), std::string::npos) << d.error().message;
}

INSTANTIATE_TEST_SUITE_P(GoSyntax, DurationRefuses,
                         ::testing::Values("", "5", "-5s", "5x", "s", "1.2.3s", "5 s", "ms", "1d",
                                           "9999999999h"));

TEST(Duration, FormatsInTheLargestWholeUnit) {
  EXPECT_EQ(FormatDuration(5min), "5m");
  EXPECT_EQ(FormatDuration(90s), "90s");
  EXPECT_EQ(FormatDuration(2h), "2h");
  EXPECT_EQ(FormatDuration(1500ms), "1500ms");
  EXPECT_EQ(FormatDuration(0s), "0s");
}

}  // namespace
}  // namespace berth
