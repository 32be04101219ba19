// Runner rules (seed 001): which runner serves an environment. A rule names a runner and,
// optionally, a project and an environment type; the most specific matching rule wins, a
// project beating an environment type.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace berth {

struct RunnerRule {
  std::string id;
  std::string runner_id;
  std::string project_id;   // empty: any project
  std::string env_type_id;  // empty: any environment type
};

// The winning rule for an environment of project and env_type, if any rule matches.
std::optional<RunnerRule> ChooseRunnerRule(const std::vector<RunnerRule>& rules,
                                           const std::string& project, const std::string& env_type);

}  // namespace berth
