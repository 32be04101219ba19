// Replaces secret values in text before it is logged or reported: values of sensitive
// variables and of any value listed in BERTH_MASK_FILE.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace berth {

class Masker {
 public:
  static constexpr std::string_view kMask = "***";

  // Values shorter than kMinLength are ignored: masking "a" or "1" would shred every line
  // while protecting nothing.
  static constexpr size_t kMinLength = 3;

  void Add(std::string value);
  // Every occurrence of every value, longest values first so that a value containing another
  // is masked whole.
  std::string Mask(std::string_view text) const;
  bool Empty() const { return values_.empty(); }

 private:
  std::vector<std::string> values_;  // sorted longest first
};

}  // namespace berth
