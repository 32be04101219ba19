// Durations in Go's syntax ("300ms", "1.5h", "2h45m", "0"), as Kubernetes components and the
// runner's flags write them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

using Duration = std::chrono::nanoseconds;

// Go's time.ParseDuration grammar: [-+]?(number unit)+ or "0"; units ns us µs ms s m h.
// Negative durations are refused (no berth setting means "before now").
Result<Duration> ParseDuration(std::string_view text);
std::string FormatDuration(Duration d);

}  // namespace berth
