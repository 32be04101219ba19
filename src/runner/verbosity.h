// Which verbose log lines the runner writes: -v for all, --vmodule for some. Kubernetes
// components match --vmodule patterns against source files; the runner's log lines are named
// by their step (init, plan, runner, ...), so its patterns match step names, with the same
// glob rules (* and ?) and the same "pattern=N,..." form.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace berth::runner {

class Verbosity {
 public:
  Verbosity() = default;
  explicit Verbosity(int level) : level_(level) {}

  // "pattern=N[,pattern=N...]"; an empty value has no entries.
  static Result<std::vector<std::pair<std::string, int>>> ParseVmodule(std::string_view value);

  void SetLevel(int level) { level_ = level; }
  void SetModules(std::vector<std::pair<std::string, int>> modules) {
    modules_ = std::move(modules);
  }
  int Level() const { return level_; }
  bool HasModules() const { return !modules_.empty(); }

  // Whether a line of this level from this step is written: the first --vmodule pattern that
  // matches the step decides, else -v.
  bool Enabled(std::string_view step, int level) const;

 private:
  int level_ = 0;
  std::vector<std::pair<std::string, int>> modules_;
};

// A glob: * matches any run of characters, ? any one, everything else itself. Linear in the
// text's length times the pattern's (no backtracking explosion).
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace berth::runner
