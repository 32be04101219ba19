// Masking by plain search: the number of secrets per run is small.
#include "core/masker.h"

#include <algorithm>

namespace berth {

void Masker::Add(std::string value) {
  if (value.size() < kMinLength) return;
  if (std::find(values_.begin(), values_.end(), value) != values_.end()) return;
  values_.push_back(std::move(value));
  std::stable_sort(values_.begin(), values_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Masker::Mask(std::string_view text) const {
  std::string out(text);
  for (const auto& value : values_) {
    size_t at = 0;
    while ((at = out.find(value, at)) != std::string::npos) {
      out.replace(at, value.size(), kMask);
      at += kMask.size();
    }
  }
  return out;
}

}  // namespace berth
