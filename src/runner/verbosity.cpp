// -v and --vmodule.
#include "runner/verbosity.h"

#include "core/decimal.h"

namespace berth::runner {
namespace {

constexpr size_t kMaxPatternBytes = 256;

Error Invalid(std::string rule) { return MakeError(ErrorKind::kInvalidArgument, std::move(rule)); }

}  // namespace

Result<std::vector<std::pair<std::string, int>>> Verbosity::ParseVmodule(std::string_view value) {
  std::vector<std::pair<std::string, int>> modules;
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view entry = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    size_t eq = entry.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == entry.size())
      return Invalid("each entry must be pattern=N");
    std::string_view pattern = entry.substr(0, eq), level = entry.substr(eq + 1);
    if (pattern.size() > kMaxPatternBytes)
      return Invalid("a pattern has at most " + std::to_string(kMaxPatternBytes) + " bytes");
    auto n = ParseDecimal<int>(level);
    if (!n || *n < 0)
      return Invalid("each entry must be pattern=N with N a whole number of at least 0");
    modules.emplace_back(std::string(pattern), *n);
    if (comma != std::string_view::npos && value.empty()) return Invalid("a trailing comma");
  }
  return modules;
}

bool Verbosity::Enabled(std::string_view step, int level) const {
  for (const auto& [pattern, module_level] : modules_) {
    if (GlobMatch(pattern, step)) return level <= module_level;
  }
  return level <= level_;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // The classic two-pointer matcher: on a mismatch, retry from the last * one character later.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace berth::runner
