// RFC 3339 timestamps with 0, 3 and 6 fraction digits.
#include "core/time_format.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(TimeFormat, WholeSecondsMillisecondsMicroseconds) {
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1795977530123456));
  EXPECT_EQ(FormatRfc3339(t), "2026-11-29T18:38:50Z");
  EXPECT_EQ(FormatRfc3339(t, 3), "2026-11-29T18:38:50.123Z");
  EXPECT_EQ(FormatRfc3339(t, 6), "2026-11-29T18:38:50.123456Z");
  EXPECT_EQ(FormatRfc3339(std::chrono::system_clock::time_point{}, 3), "1970-01-01T00:00:00.000Z");
}

TEST(TimeFormat, ParsesWhatItWritesAndNothingElse) {
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1795977530123456));
  EXPECT_EQ(ParseRfc3339Millis(FormatRfc3339(t)), 1795977530000);
  EXPECT_EQ(ParseRfc3339Millis(FormatRfc3339(t, 3)), 1795977530123);
  EXPECT_EQ(ParseRfc3339Millis(FormatRfc3339(t, 6)), 1795977530123);
  EXPECT_EQ(ParseRfc3339Millis("1970-01-01T00:00:00.000Z"), 0);
  for (const char* bad :
       {"", "Z", "2026-11-29T18:38:50", "2026-11-29 18:38:50Z", "2026-11-29T18:38:50.1Z",
        "2026-13-29T18:38:50Z", "2026-11-29T24:38:50Z", "2026-11-29T18:38:50.12aZ",
        "2026-11-29T18:38:50.123456+01:00", "2026-11-29T18:38:50.123x56Z", "２026-11-29T18:38:50Z"})
    EXPECT_FALSE(ParseRfc3339Millis(bad)) << bad;
}

}  // namespace
}  // namespace berth
