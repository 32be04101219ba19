#include "core/pattern.h"

#include <re2/re2.h>

#include <cstdlib>
#include <iostream>

namespace berth {

Pattern::Pattern(std::string_view expression)
    : re_(std::make_unique<re2::RE2>(re2::StringPiece(expression.data(), expression.size()),
                                     re2::RE2::Quiet)) {
  if (!re_->ok()) {
    std::cerr << "berth: bad built-in pattern " << expression << ": " << re_->error() << "\n";
    std::abort();
  }
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;

bool Pattern::Matches(std::string_view value) const {
  return re2::RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *re_);
}

}  // namespace berth
