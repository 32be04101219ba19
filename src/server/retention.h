// What berthd keeps and for how long, so that its database does not grow with every
// deployment: ended deployments (with their logs, events and artifacts) past
// --keep-deployments-for, except the newest ended one of each environment; bundles no
// deployment runs, an hour after their last upload; and each environment's state versions
// beyond its state_retention (the last keep_last, and everything younger than
// keep_younger_than, stay). Nothing a queued or running deployment needs is removed: a
// deployment is pruned only once it has ended, a bundle only when no deployment refers to it.
// Several replicas may prune at once: each removal is one idempotent statement.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/clock.h"
#include "store/store.h"
#include "sys/logger.h"

namespace berth::server {

struct RetentionPolicy {
  std::chrono::milliseconds ended_deployments_kept_for = std::chrono::hours(90 * 24);
  // A bundle is uploaded before its deployment is made: it is spared this long.
  std::chrono::milliseconds unused_bundles_kept_for = std::chrono::hours(1);
  std::chrono::milliseconds every = std::chrono::minutes(10);
};

// An environment's state_retention, its defaults filled in.
struct StateRetention {
  static constexpr int64_t kDefaultKeepLast = 100;
  static constexpr char kDefaultKeepYoungerThan[] = "720h";

  int64_t keep_last = kDefaultKeepLast;
  std::chrono::milliseconds keep_younger_than = std::chrono::hours(720);

  // From the environment's body (checked when it was saved); the defaults where it has none.
  static StateRetention Of(const nlohmann::json& environment_body);
};

class Retention {
 public:
  Retention(store::Store& store, RetentionPolicy policy, sys::Logger& log, Clock& clock)
      : store_(store), policy_(policy), log_(log), clock_(clock) {}

  // A pass when one is due: at the first call, then every policy.every.
  void PruneIfDue();
  // One pass, as if it were now_ms (milliseconds since the epoch).
  void Prune(int64_t now_ms);

 private:
  void PruneStateVersions(int64_t now_ms);

  store::Store& store_;
  const RetentionPolicy policy_;
  sys::Logger& log_;
  Clock& clock_;
  std::optional<std::chrono::steady_clock::time_point> next_;
};

}  // namespace berth::server
