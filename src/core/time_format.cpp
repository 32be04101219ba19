// strftime for the whole seconds, the fraction by hand.
#include "core/time_format.h"

#include <cstdio>
#include <ctime>

namespace berth {

std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  auto seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  if (fraction_digits == 3) {
    std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(us % 1000000 / 1000));
  } else if (fraction_digits == 6) {
    std::snprintf(text + n, sizeof text - n, ".%06dZ", static_cast<int>(us % 1000000));
  } else {
    std::snprintf(text + n, sizeof text - n, "Z");
  }
  return text;
}

std::optional<int64_t> ParseRfc3339Millis(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS, then nothing, 3 or 6 fraction digits, then Z.
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  if (text.size() < kShape.size() + 1 || text.back() != 'Z') return std::nullopt;
  auto digits = [&](size_t at, size_t n) -> std::optional<int> {
    int value = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  for (size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] != 'd' && text[i] != kShape[i]) return std::nullopt;
  }
  std::string_view fraction = text.substr(kShape.size(), text.size() - kShape.size() - 1);
  if (!(fraction.empty() || ((fraction.size() == 4 || fraction.size() == 7) && fraction[0] == '.')))
    return std::nullopt;
  auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
  auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
  auto millis = fraction.empty() ? std::optional<int>(0) : digits(kShape.size() + 1, 3);
  if (fraction.size() == 7 && !digits(kShape.size() + 4, 3)) return std::nullopt;
  if (!year || !month || !day || !hour || !minute || !second || !millis) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 ||
      *second > 60)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + *millis;
}

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t UnixSecondsNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace berth
