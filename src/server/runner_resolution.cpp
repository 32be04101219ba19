#include "server/runner_resolution.h"

namespace berth::server {

Result<std::vector<RunnerRule>> LoadRunnerRules(store::Store& store, const std::string& org) {
  auto records = store::ListAll(store, store::Kind::kRunnerRule, org, "");
  if (!records) return records.error();
  std::vector<RunnerRule> rules;
  for (const auto& rec : *records) {
    rules.push_back({rec.id, rec.columns.at("runner_id").value_or(""),
                     rec.columns.at("project_id").value_or(""),
                     rec.columns.at("env_type_id").value_or("")});
  }
  return rules;
}

Result<std::string> ResolveRunner(store::Store& store, const std::string& org,
                                  const std::string& project, const std::string& env_id) {
  constexpr int kAttempts = 3;  // an environment updated meanwhile is read again
  for (int attempt = 0;; ++attempt) {
    auto env = store.Get(store::Kind::kEnvironment, org, project, env_id);
    if (!env) return env.error();
    if (auto linked = env->columns["runner_id"]; linked && !linked->empty()) return *linked;
    auto rules = LoadRunnerRules(store, org);
    if (!rules) return rules.error();
    auto rule = ChooseRunnerRule(*rules, project, env->columns["env_type_id"].value_or(""));
    if (!rule)
      return MakeError(
          ErrorKind::kFailedPrecondition,
          "environment " + project + "/" + env_id + " has no runner and no runner rule matches it");
    env->columns["runner_id"] = rule->runner_id;
    auto updated = store.Update(*env, env->version);
    if (updated) return rule->runner_id;
    if (updated.error().kind != ErrorKind::kConflict || attempt + 1 == kAttempts)
      return updated.error();
  }
}

Result<StateStorage> StateStorageOf(store::Store& store, const std::string& org,
                                    const std::string& project, const std::string& env) {
  auto runner_id = ResolveRunner(store, org, project, env);
  if (!runner_id) return runner_id.error();
  auto runner = store.Get(store::Kind::kRunner, org, "", *runner_id);
  if (!runner) return runner.error();
  return ParseStateStorage(runner->body.value("state_storage_configuration", nlohmann::json()));
}

}  // namespace berth::server
