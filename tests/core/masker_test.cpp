// Masking secrets out of text.
#include "core/masker.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(Masker, ReplacesEveryOccurrenceOfEveryValue) {
  Masker m;
  m.Add("hunter2");
  m.Add("s3cr3t");
  EXPECT_EQ(m.Mask("a hunter2 b s3cr3t c hunter2"), "a *** b *** c ***");
}

TEST(Masker, MasksALongerValueWholeEvenIfAShorterOneIsInside) {
  Masker m;
  m.Add("abc");
  m.Add("xxabcxx");
  EXPECT_EQ(m.Mask("[xxabcxx] [abc]"), "[***] [***]");
}

TEST(Masker, IgnoresValuesTooShortToMeanAnything) {
  Masker m;
  m.Add("");
  m.Add("a");
  m.Add("12");
  EXPECT_TRUE(m.Empty());
  EXPECT_EQ(m.Mask("a 12 b"), "a 12 b");
}

// A PEM key reaches the log one line at a time, and JSON-escaped in a plan.
TEST(Masker, AMultiLineValueIsMaskedLineByLineAndEscaped) {
  Masker m;
  m.Add("-----BEGIN KEY-----\r\nMIIBVgIBADANBg\n-----END KEY-----");
  EXPECT_EQ(m.Mask("  MIIBVgIBADANBg"), "  ***");
  EXPECT_EQ(m.Mask("-----BEGIN KEY-----"), "***");
  EXPECT_EQ(m.Mask(R"(key = "-----BEGIN KEY-----\r\nMIIBVgIBADANBg\n-----END KEY-----")"),
            "key = \"***\"");
}

// TF prints a sensitive map's or list's elements one by one.
TEST(Masker, AMapOrListIsMaskedWholeAndLeafByLeaf) {
  Masker m;
  m.AddValue(nlohmann::json::parse(
      R"({"user":"svc-admin","password":"pw-99xx","ports":[8443,"port-b"],"on":true})"));
  EXPECT_EQ(m.Mask("user svc-admin pw pw-99xx port 8443 port-b on true"),
            "user *** pw *** port *** *** on true");
  EXPECT_EQ(
      m.Mask(R"({"on":true,"password":"pw-99xx","ports":[8443,"port-b"],"user":"svc-admin"})"),
      "***");
  // As deep as a bounded parse lets it be.
  nlohmann::json deep = "deep-secret";
  for (int i = 0; i < 60; ++i) deep = nlohmann::json::object({{"k", deep}});
  m.AddValue(deep);
  EXPECT_EQ(m.Mask("a deep-secret"), "a ***");
}

// A line too long to hold is written in parts: never through a secret.
TEST(Masker, ACutNeverSplitsASecret) {
  Masker m;
  m.Add("secret-value");
  EXPECT_EQ(m.SafeCut("abc secret-value def"), 20u);  // whole: nothing open at the end
  EXPECT_EQ(m.SafeCut("abc secret-va"), 4u);          // the secret may go on
  EXPECT_EQ(m.SafeCut("abc secret-value"), 16u);
  EXPECT_EQ(m.SafeCut("secret-val"), 0u);
  EXPECT_EQ(m.SafeCut("abc s"), 4u);
  Masker none;
  EXPECT_EQ(none.SafeCut("anything"), 8u);
}

}  // namespace
}  // namespace berth
