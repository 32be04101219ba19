#include "core/decimal.h"

#include <gtest/gtest.h>
#include <sys/types.h>

namespace berth {
namespace {

TEST(ParseDecimal, TakesOnlyTextThatIsWhollyOneNumberInRange) {
  EXPECT_EQ(ParseDecimal<int>("200"), 200);
  EXPECT_EQ(ParseDecimal<int>("-7"), -7);
  EXPECT_EQ(ParseDecimal<pid_t>("2147483647"), 2147483647);
  // What std::atoi would have read as 12, 0 or a wrapped value.
  EXPECT_EQ(ParseDecimal<int>("12abc"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("abc"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>(""), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>(" 5"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("5\n"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("+5"), std::nullopt);
  EXPECT_EQ(ParseDecimal<pid_t>("2147483648"), std::nullopt);
  EXPECT_EQ(ParseDecimal<unsigned>("-1"), std::nullopt);
}

}  // namespace
}  // namespace berth
