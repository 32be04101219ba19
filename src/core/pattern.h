// A regular expression matched in time linear in its input (RE2): berth matches patterns
// against values from outside, where a backtracking engine (libstdc++'s std::regex recurses per
// character) lets one long value overflow the stack.
#pragma once

#include <memory>
#include <string_view>

namespace re2 {
class RE2;
}

namespace berth {

class Pattern {
 public:
  // The whole of a value must match `expression` (RE2 syntax; a bad one is a bug: it aborts).
  explicit Pattern(std::string_view expression);
  ~Pattern();
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;

  bool Matches(std::string_view value) const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace berth
