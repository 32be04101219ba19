// Kubernetes resource quantities ("500m", "1.5Gi", "1e3"), with the grammar and canonical form
// of the Kubernetes API reference (apimachinery's resource.Quantity): compared by value, never
// as strings.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

// 128-bit arithmetic keeps every quantity exact in nano-units (__extension__: GCC and clang have
// it; -Wpedantic would name it non-standard).
__extension__ typedef __int128 QuantityInt;

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  // <signedNumber><suffix>: suffix one of "", n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or
  // e<signedNumber> / E<signedNumber>. Values finer than a nano are rounded up to it.
  static Result<Quantity> Parse(std::string_view text);

  // The canonical form: the largest suffix of the same kind that keeps the number whole
  // ("1.5Gi" -> "1536Mi", "0.5" -> "500m", "1000" -> "1k"); binary values that are not whole
  // in any binary suffix fall back to decimal SI.
  std::string ToString() const;
  Format GetFormat() const { return format_; }
  bool IsNegative() const { return nanos_ < 0; }
  // The value as a whole number, if it is one and fits in int64 (apimachinery's AsInt64).
  std::optional<int64_t> AsInt64() const;

  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nanos_ <=> b.nanos_;
  }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }

 private:
  Quantity(QuantityInt nanos, Format format) : nanos_(nanos), format_(format) {}
  QuantityInt nanos_;  // the value in units of 10^-9
  Format format_;
};

}  // namespace berth
