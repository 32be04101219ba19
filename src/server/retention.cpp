#include "server/retention.h"

#include "core/duration.h"
#include "core/environment_ref.h"

namespace berth::server {
namespace {

using nlohmann::json;

// Deployments are removed in batches, a bounded number per pass: a first pass over a large
// backlog does not hold the dispatcher's thread for long; the next pass goes on.
constexpr int kDeploymentBatch = 500;
constexpr int kDeploymentBatchesPerPass = 20;

int64_t Millis(std::chrono::milliseconds d) { return d.count(); }

// "org/project/env", the key of an environment's state in berth's backend.
std::optional<EnvironmentRef> EnvironmentOfKey(const std::string& key) {
  size_t first = key.find('/');
  size_t second = first == std::string::npos ? first : key.find('/', first + 1);
  if (second == std::string::npos || key.find('/', second + 1) != std::string::npos)
    return std::nullopt;
  return EnvironmentRef{key.substr(0, first), key.substr(first + 1, second - first - 1),
                        key.substr(second + 1)};
}

}  // namespace

StateRetention StateRetention::Of(const json& environment_body) {
  StateRetention out;
  const json setting = environment_body.value("state_retention", json::object());
  if (!setting.is_object()) return out;
  if (auto n = setting.find("keep_last"); n != setting.end() && n->is_number_integer())
    out.keep_last = n->get<int64_t>();
  if (auto d = setting.find("keep_younger_than"); d != setting.end() && d->is_string()) {
    if (auto parsed = ParseDuration(d->get<std::string>()))
      out.keep_younger_than = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
  }
  return out;
}

void Retention::PruneIfDue() {
  auto now = clock_.Now();
  if (next_ && now < *next_) return;
  next_ = now + policy_.every;
  Prune(clock_.WallMillis());
}

void Retention::Prune(int64_t now_ms) {
  int64_t deployments = 0;
  for (int batch = 0; batch < kDeploymentBatchesPerPass; ++batch) {
    auto pruned = store_.Deployments().PruneEnded(
        now_ms - Millis(policy_.ended_deployments_kept_for), kDeploymentBatch);
    if (!pruned) {
      log_.Error("ended deployments not pruned", {{"why", pruned.error().message}});
      break;
    }
    deployments += *pruned;
    if (*pruned < kDeploymentBatch) break;
  }
  // After the deployments: the bundles they ran are unused from here.
  auto bundles =
      store_.DeploymentData().PruneBundles(now_ms - Millis(policy_.unused_bundles_kept_for));
  if (!bundles) log_.Error("unused bundles not pruned", {{"why", bundles.error().message}});
  // Agents' settled commands go with the deployments they launched.
  auto commands = store_.Agents().PruneSettled(now_ms - Millis(policy_.ended_deployments_kept_for));
  if (!commands) log_.Error("agent commands not pruned", {{"why", commands.error().message}});
  if (deployments > 0 || (bundles && *bundles > 0) || (commands && *commands > 0))
    log_.Info("pruned", {{"ended_deployments", std::to_string(deployments)},
                         {"unused_bundles", std::to_string(bundles ? *bundles : 0)},
                         {"agent_commands", std::to_string(commands ? *commands : 0)}});
  PruneStateVersions(now_ms);
}

void Retention::PruneStateVersions(int64_t now_ms) {
  auto keys = store_.States().KeysWithHistory();
  if (!keys) {
    log_.Error("state versions not pruned", {{"why", keys.error().message}});
    return;
  }
  for (const std::string& key : *keys) {
    StateRetention policy;
    if (auto where = EnvironmentOfKey(key)) {
      auto env = store_.Get(store::Kind::kEnvironment, where->org, where->project, where->env);
      if (env) policy = StateRetention::Of(env->body);
    }
    auto pruned = store_.States().PruneVersions(key, policy.keep_last,
                                                now_ms - Millis(policy.keep_younger_than));
    if (!pruned)
      log_.Error("state versions not pruned", {{"state", key}, {"why", pruned.error().message}});
    else if (*pruned > 0)
      log_.Info("pruned", {{"state", key}, {"state_versions", std::to_string(*pruned)}});
  }
}

}  // namespace berth::server
