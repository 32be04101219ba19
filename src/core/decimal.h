// Whole decimal numbers from text that may be hostile: std::atoi would turn "12abc" into 12
// and "abc" or an overflow into 0 without a word.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace berth {

// text as a T when all of it is one decimal number of T's range (a sign only for signed T).
template <class T>
std::optional<T> ParseDecimal(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  // NOLINTNEXTLINE(bugprone-suspicious-stringview-data-usage): the end goes with it
  auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end || text.empty()) return std::nullopt;
  return value;
}

}  // namespace berth
