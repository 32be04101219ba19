// Kubernetes quantities: valid forms and their canonical strings, invalid forms and the rule
// each breaks, comparison by value.
#include "core/quantity.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

struct Canonical {
  std::string in, out;
};

class QuantityCanonical : public ::testing::TestWithParam<Canonical> {};

TEST_P(QuantityCanonical, ParsesToItsCanonicalForm) {
  auto q = Quantity::Parse(GetParam().in);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->ToString(), GetParam().out) << GetParam().in;
  auto again = Quantity::Parse(q->ToString());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *q) << "the canonical form must mean the same value";
}

INSTANTIATE_TEST_SUITE_P(
    Rows, QuantityCanonical,
    ::testing::Values(Canonical{"0", "0"}, Canonical{"1", "1"}, Canonical{"500m", "500m"},
                      Canonical{"0.5", "500m"}, Canonical{"1000m", "1"}, Canonical{".1", "100m"},
                      Canonical{"1.", "1"}, Canonical{"1000", "1k"}, Canonical{"1500", "1500"},
                      Canonical{"1024", "1024"}, Canonical{"2M", "2M"}, Canonical{"1000k", "1M"},
                      Canonical{"1Ki", "1Ki"}, Canonical{"1024Ki", "1Mi"},
                      Canonical{"1.5Gi", "1536Mi"}, Canonical{"0.5Ki", "512"},
                      Canonical{"1.1Ki", "1126400m"}, Canonical{"512Mi", "512Mi"},
                      Canonical{"4Gi", "4Gi"}, Canonical{"1e3", "1e3"}, Canonical{"1E3", "1e3"},
                      Canonical{"1e-3", "1e-3"}, Canonical{"1n", "1n"},
                      Canonical{"0.1n", "1n"},  // finer than a nano rounds up
                      Canonical{"-250m", "-250m"}, Canonical{"+2", "2"}, Canonical{"1P", "1P"},
                      Canonical{"2E", "2E"}, Canonical{"1Ei", "1Ei"},
                      // Past int64, as Kubernetes keeps them (apimachinery's inf.Dec path).
                      Canonical{"8Ei", "8Ei"}, Canonical{"16Ei", "16Ei"},
                      Canonical{"10000000000000000000", "10E"}, Canonical{"1e21", "1e21"},
                      Canonical{"1e27", "1e27"}));

struct Bad {
  std::string in, rule;
};

class QuantityRefused : public ::testing::TestWithParam<Bad> {};

TEST_P(QuantityRefused, NamingTheRule) {
  auto q = Quantity::Parse(GetParam().in);
  ASSERT_FALSE(q) << GetParam().in << " parsed";
  EXPECT_NE(q.error().message.find(GetParam().rule), std::string::npos) << q.error().message;
  EXPECT_NE(q.error().message.find("\"" + GetParam().in + "\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, QuantityRefused,
    ::testing::Values(Bad{"", "empty"}, Bad{"abc", "must start with a number"},
                      Bad{"Ki", "must start with a number"}, Bad{".", "must start with a number"},
                      Bad{"--1", "must start with a number"},
                      Bad{"1.2.3", "at most one decimal point"}, Bad{"1KiB", "unknown suffix"},
                      Bad{"1 Ki", "unknown suffix"}, Bad{"1ki", "unknown suffix"},
                      Bad{"1Ki5", "unknown suffix"}, Bad{"1e", "unknown suffix"},
                      Bad{"1ee3", "whole number"}, Bad{"1e1000", "1 to 3 digits"},
                      Bad{"9000000000Ei", "too large"}, Bad{"1e28", "too large"},
                      Bad{"1e300", "too large"}));

TEST(Quantity, ComparesByValueNotBySpelling) {
  auto q = [](const char* s) { return *Quantity::Parse(s); };
  EXPECT_EQ(q("500m"), q("0.5"));
  EXPECT_EQ(q("1Gi"), q("1024Mi"));
  EXPECT_EQ(q("1e3"), q("1k"));
  EXPECT_GT(q("1Gi"), q("1G"));
  EXPECT_LT(q("250m"), q("1"));
  EXPECT_LT(q("999Mi"), q("1Gi"));
  EXPECT_LT(q("-1"), q("0"));
  // 2^63 and beyond compare exactly: 8Ei is one more than the largest int64.
  EXPECT_EQ(q("8Ei"), q("9223372036854775808"));
  EXPECT_GT(q("8Ei"), q("9223372036854775807"));
  EXPECT_LT(q("8Ei"), q("9223372036854775808001m"));
  EXPECT_TRUE(q("-1").IsNegative());
  EXPECT_EQ(q("1.5Gi").GetFormat(), Quantity::Format::kBinarySI);
  EXPECT_EQ(q("2e3").GetFormat(), Quantity::Format::kDecimalExponent);
}

TEST(Quantity, AsInt64OnlyForWholeValuesThatFit) {
  auto q = [](const char* s) { return *Quantity::Parse(s); };
  EXPECT_EQ(q("64Ki").AsInt64(), 65536);
  EXPECT_EQ(q("-2k").AsInt64(), -2000);
  EXPECT_EQ(q("1500m").AsInt64(), std::nullopt);
  EXPECT_EQ(q("9223372036854775807").AsInt64(), INT64_MAX);
  EXPECT_EQ(q("8Ei").AsInt64(), std::nullopt);
}

}  // namespace
}  // namespace berth
