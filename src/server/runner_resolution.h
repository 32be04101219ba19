// Which runner serves an environment: the one it is linked to, else the runner its
// organization's rules choose, which the first deployment then links (seed 001: the link
// stays until refresh_runner moves it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/runner_rules.h"
#include "core/state_storage.h"
#include "store/store.h"

namespace berth::server {

// Every rule of the organization (their number is small: one per selector).
Result<std::vector<RunnerRule>> LoadRunnerRules(store::Store& store, const std::string& org);

// The environment's runner id, linking it by the rules when it has none (kFailedPrecondition
// when no rule matches).
Result<std::string> ResolveRunner(store::Store& store, const std::string& org,
                                  const std::string& project, const std::string& env);

// Where the environment's state lives: its runner's state storage, as saved (an error names
// the field a row written by another version has wrong).
Result<StateStorage> StateStorageOf(store::Store& store, const std::string& org,
                                    const std::string& project, const std::string& env);

}  // namespace berth::server
