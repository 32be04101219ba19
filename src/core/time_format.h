// Wall-clock time as berth records it: RFC 3339 timestamps in UTC ("2026-11-29T17:37:00.123Z"),
// with 0, 3 or 6 fraction digits (result documents use seconds, log lines milliseconds,
// Kubernetes MicroTime microseconds), and Unix times for the store and for tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace berth {

std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits = 0);

// Milliseconds since the epoch of an RFC 3339 UTC timestamp as FormatRfc3339 writes them
// ("2026-11-29T17:37:00Z", "...00.123Z", "...00.123456Z"); nothing for anything else.
std::optional<int64_t> ParseRfc3339Millis(std::string_view text);

// Now, since the Unix epoch: milliseconds (what the store keeps), seconds (JWT times).
int64_t UnixMillisNow();
int64_t UnixSecondsNow();

}  // namespace berth
