// Name <-> value lookups for enums whose names are a fixed table: error kinds, runner types,
// state storage types. One place for the loop every such table needs.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace berth {

template <class Enum, size_t N>
using EnumNames = std::array<std::pair<Enum, std::string_view>, N>;

template <class Enum, size_t N>
constexpr std::string_view NameOf(const EnumNames<Enum, N>& names, Enum value,
                                  std::string_view fallback) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return fallback;
}

template <class Enum, size_t N>
constexpr std::optional<Enum> ValueOf(const EnumNames<Enum, N>& names, std::string_view name) {
  for (const auto& [v, n] : names) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// Every value, in the table's order.
template <class Enum, size_t N>
std::vector<Enum> ValuesOf(const EnumNames<Enum, N>& names) {
  std::vector<Enum> values;
  values.reserve(N);
  for (const auto& [v, n] : names) values.push_back(v);
  return values;
}

}  // namespace berth
