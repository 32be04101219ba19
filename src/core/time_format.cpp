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
