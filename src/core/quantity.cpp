// Exact arithmetic in nano-units on 128-bit integers. Kubernetes keeps values past int64 exactly
// (apimachinery falls back to inf.Dec), so "8Ei" (2^63) is a valid limit; berth keeps up to 10^27
// units exactly, far beyond any real resource, and refuses more rather than round.
#include "core/quantity.h"

#include <array>
#include <cctype>
#include <limits>
#include <utility>

namespace berth {
namespace {

using Int = QuantityInt;

constexpr Int kNano = 1000000000;
constexpr Int kMaxUnits = static_cast<Int>(1000000000000000000LL) * 1000000000;  // 10^27
// |value| beyond this is refused; 10^36 nanos leave headroom under 2^127 for one more digit.
constexpr Int kMaxNanos = kMaxUnits * kNano;

Error Invalid(std::string_view text, std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument,
                   "invalid quantity \"" + std::string(text) + "\": " + std::move(rule));
}

Error TooLarge(std::string_view text) {
  return Invalid(text, "too large (berth keeps quantities up to 10^27 exactly)");
}

Int Pow(Int base, int exp) {
  Int r = 1;
  while (exp-- > 0) r *= base;
  return r;
}

std::string ToDecimal(Int v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  if (negative) v = -v;
  std::string digits;
  while (v > 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return negative ? "-" + digits : digits;
}

constexpr std::array<std::pair<std::string_view, int>, 8> kDecimalSuffixes{
    {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}}};
constexpr std::array<std::pair<std::string_view, int>, 2> kLargeDecimal{{{"P", 15}, {"E", 18}}};
constexpr std::array<std::string_view, 6> kBinarySuffixes{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return Invalid(text, "empty");
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  // The number: digits with at most one '.', at least one digit.
  size_t i = 0;
  Int mantissa = 0;
  int fraction_digits = 0;
  bool dot = false, digit = false;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      if (dot) return Invalid(text, "a number has at most one decimal point");
      dot = true;
      continue;
    }
    digit = true;
    if (mantissa > kMaxNanos) return TooLarge(text);
    mantissa = mantissa * 10 + (s[i] - '0');
    if (dot) ++fraction_digits;
  }
  if (!digit) return Invalid(text, "must start with a number");
  std::string_view suffix = s.substr(i);

  // The scale: value = mantissa * 10^(exp10 - fraction_digits) * 1024^binary.
  int exp10 = 0, binary = 0;
  Format format = Format::kDecimalSI;
  bool known = false;
  for (const auto& [name, exp] : kDecimalSuffixes) {
    if (suffix == name) exp10 = exp, known = true;
  }
  for (const auto& [name, exp] : kLargeDecimal) {
    if (suffix == name) exp10 = exp, known = true;
  }
  for (size_t b = 0; b < kBinarySuffixes.size() && !known; ++b) {
    if (suffix == kBinarySuffixes[b]) {
      binary = static_cast<int>(b) + 1;
      format = Format::kBinarySI;
      known = true;
    }
  }
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3) return Invalid(text, "the exponent must be 1 to 3 digits");
    int value = 0;
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        return Invalid(text, "the exponent must be a whole number");
      }
      value = value * 10 + (c - '0');
    }
    exp10 = e_negative ? -value : value;
    format = Format::kDecimalExponent;
    known = true;
  }
  if (!known) {
    return Invalid(text, "unknown suffix \"" + std::string(suffix) +
                             "\" (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<n>)");
  }

  // To nano-units, rounding up what is finer than a nano (as Kubernetes does).
  int shift = exp10 - fraction_digits + 9;
  Int nanos = mantissa;
  if (binary > 0) {
    if (nanos > kMaxNanos / Pow(1024, binary)) return TooLarge(text);
    nanos *= Pow(1024, binary);
  }
  if (shift >= 0) {
    if (shift > 36) {
      if (nanos != 0) return TooLarge(text);
    } else {
      Int scale = Pow(10, shift);
      if (nanos > kMaxNanos / scale) return TooLarge(text);
      nanos *= scale;
    }
  } else {
    if (-shift > 36) {
      nanos = nanos == 0 ? 0 : 1;
    } else {
      Int scale = Pow(10, -shift);
      nanos = nanos / scale + (nanos % scale != 0 ? 1 : 0);
    }
  }
  if (nanos > kMaxNanos) return TooLarge(text);
  return Quantity(negative ? -nanos : nanos, format);
}

std::optional<int64_t> Quantity::AsInt64() const {
  if (nanos_ % kNano != 0) return std::nullopt;
  Int units = nanos_ / kNano;
  if (units > std::numeric_limits<int64_t>::max() || units < std::numeric_limits<int64_t>::min())
    return std::nullopt;
  return static_cast<int64_t>(units);
}

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  Int magnitude = nanos_ < 0 ? -nanos_ : nanos_;
  std::string sign = nanos_ < 0 ? "-" : "";
  if (format_ == Format::kBinarySI && magnitude % kNano == 0) {
    Int units = magnitude / kNano;
    int b = 0;
    while (b < 6 && units % 1024 == 0) {
      units /= 1024;
      ++b;
    }
    return sign + ToDecimal(units) +
           (b == 0 ? "" : std::string(kBinarySuffixes[static_cast<size_t>(b - 1)]));
  }
  // Decimal: the largest power of a thousand that keeps the number whole.
  // Suffixes end at E (10^18); the exponent form has no such end.
  int max_exp = format_ == Format::kDecimalExponent ? 36 : 18;
  int exp = -9;
  Int value = magnitude;
  while (exp < max_exp && value % 1000 == 0) {
    value /= 1000;
    exp += 3;
  }
  if (format_ == Format::kDecimalExponent) {
    return sign + ToDecimal(value) + (exp == 0 ? "" : "e" + std::to_string(exp));
  }
  std::string_view suffix;
  for (const auto& [name, e] : kDecimalSuffixes) {
    if (e == exp) suffix = name;
  }
  for (const auto& [name, e] : kLargeDecimal) {
    if (e == exp) suffix = name;
  }
  return sign + ToDecimal(value) + std::string(suffix);
}

}  // namespace berth
