// Rule precedence: project and type (3) > project (2) > type (1) > neither (0). Selectors are
// unique (the store enforces it), so no two matching rules share a score.
#include "core/runner_rules.h"

namespace berth {

std::optional<RunnerRule> ChooseRunnerRule(const std::vector<RunnerRule>& rules,
                                           const std::string& project,
                                           const std::string& env_type) {
  std::optional<RunnerRule> best;
  int best_score = -1;
  for (const auto& rule : rules) {
    if (!rule.project_id.empty() && rule.project_id != project) continue;
    if (!rule.env_type_id.empty() && rule.env_type_id != env_type) continue;
    int score = (rule.project_id.empty() ? 0 : 2) + (rule.env_type_id.empty() ? 0 : 1);
    if (score > best_score) {
      best = rule;
      best_score = score;
    }
  }
  return best;
}

}  // namespace berth
