// A strict parser: every number needs a unit, except a lone "0".
#include "core/duration.h"

#include <array>
#include <cctype>
#include <cmath>
#include <utility>

namespace berth {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 8> kUnits{{
    {"ns", 1},
    {"us", 1e3},
    {"\xc2\xb5s", 1e3},  // µs, U+00B5
    {"\xce\xbcs", 1e3},  // μs, U+03BC
    {"ms", 1e6},
    {"s", 1e9},
    {"m", 60e9},
    {"h", 3600e9},
}};

Error Invalid(std::string_view text, std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument,
                   "invalid duration \"" + std::string(text) + "\": " + std::move(rule));
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  std::string_view s = text;
  if (s == "0") return Duration{0};
  if (s.empty()) return Invalid(text, "empty");
  if (s.front() == '-') return Invalid(text, "must not be negative");
  if (s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return Invalid(text, "a number and a unit are required");
  double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    bool digits = false;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
      digits = digits || s[i] != '.';
      ++i;
    }
    if (!digits) return Invalid(text, "expected a number");
    if (s.substr(0, i).find('.') != s.substr(0, i).rfind('.')) {
      return Invalid(text, "a number has at most one decimal point");
    }
    double number = std::stod(std::string(s.substr(0, i)));
    s.remove_prefix(i);
    // The unit runs to the next number, as in Go.
    size_t unit_end = 0;
    while (unit_end < s.size() && !std::isdigit(static_cast<unsigned char>(s[unit_end])) &&
           s[unit_end] != '.') {
      ++unit_end;
    }
    std::string_view unit = s.substr(0, unit_end);
    s.remove_prefix(unit_end);
    double scale = 0;
    for (const auto& [name, ns] : kUnits) {
      if (name == unit) scale = ns;
    }
    if (scale == 0) return Invalid(text, "missing or unknown unit (ns, us, ms, s, m, h)");
    total += number * scale;
  }
  if (total > 9.2e18) return Invalid(text, "too large");
  return Duration{static_cast<int64_t>(std::llround(total))};
}

std::string FormatDuration(Duration d) {
  auto ns = d.count();
  if (ns % 3'600'000'000'000 == 0 && ns != 0) return std::to_string(ns / 3'600'000'000'000) + "h";
  if (ns % 60'000'000'000 == 0 && ns != 0) return std::to_string(ns / 60'000'000'000) + "m";
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  return std::to_string(ns) + "ns";
}

}  // namespace berth
