// Replaces secret values in text before it is logged or reported: values of sensitive
// variables and of any value listed in BERTH_MASK_FILE.
#pragma once

#include <nlohmann/json.hpp>
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

  // A value, and the forms in which it reaches a log line by line: each of its lines (a PEM
  // key is printed one line at a time) and its JSON-escaped form ("a\nb" as TF prints it).
  void Add(std::string value);
  // A variable's value: a string as it is, a map or list whole (as JSON) and leaf by leaf,
  // since TF prints each element on its own. Booleans and null are not secrets. The value is
  // walked without recursion, but dumped whole once: parse it with ParseBoundedJson.
  void AddValue(const nlohmann::json& value);
  // Every occurrence of every value, longest values first so that a value containing another
  // is masked whole.
  std::string Mask(std::string_view text) const;
  bool Empty() const { return values_.empty(); }

  // Where text may be cut (at most its size) so that no value is split: the position before
  // which everything can be masked and written now, the rest kept until more text comes.
  // A text that is one value's beginning throughout gives 0.
  size_t SafeCut(std::string_view text) const;

 private:
  void AddOne(std::string value);
  std::vector<std::string> values_;  // sorted longest first
};

}  // namespace berth
