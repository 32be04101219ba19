// RFC 3339 timestamps in UTC ("2026-11-29T17:37:00.123Z"), with 0, 3 or 6 fraction digits:
// result documents use seconds, log lines milliseconds, Kubernetes MicroTime microseconds.
#pragma once

#include <chrono>
#include <string>

namespace berth {

std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits = 0);

}  // namespace berth
