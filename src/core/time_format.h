// Wall-clock time as berth records it: RFC 3339 timestamps in UTC ("2026-11-29T17:37:00.123Z"),
// with 0, 3 or 6 fraction digits (result documents use seconds, log lines milliseconds,
// Kubernetes MicroTime microseconds), and Unix times for the store and for tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace berth {

std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits = 0);

// Now, since the Unix epoch: milliseconds (what the store keeps), seconds (JWT times).
int64_t UnixMillisNow();
int64_t UnixSecondsNow();

}  // namespace berth
