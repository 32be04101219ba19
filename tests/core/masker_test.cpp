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

}  // namespace
}  // namespace berth
