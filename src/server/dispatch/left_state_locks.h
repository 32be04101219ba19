// State locks a run's TF took in a storage that is not berth's own and left behind when the run
// died (its runner killed, its Pod evicted): tofu cannot unlock them any more, and the next
// deployment of the environment would wait out its lock timeout and fail. berthd breaks such a
// lock only when its holder is that run: berth names each run's host after the run (a local
// run's sandbox, a runner Pod's hostname), and TF writes its host into the lock's "Who".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/environment_ref.h"
#include "core/error.h"
#include "core/state_storage.h"
#include "kube/kube_api.h"

namespace berth::server {

class LeftStateLocks {
 public:
  virtual ~LeftStateLocks() = default;
  // Breaks the lock on env's state in storage (a runner's state storage) if run
  // holds it; what was broken, for the deployment's events, or nothing.
  virtual Result<std::optional<std::string>> BreakIfHeldBy(const StateStorage& storage,
                                                           const EnvironmentRef& env,
                                                           const std::string& run_id) = 0;
};

// The kubernetes state storage's locks: the Lease lock-tfstate-default-SUFFIX in the storage's
// namespace, released as tofu's own unlock does (holder and lock info cleared), and only if it
// has not changed since it was read.
class KubernetesStateLocks final : public LeftStateLocks {
 public:
  explicit KubernetesStateLocks(kube::KubeApi& api) : api_(api) {}
  Result<std::optional<std::string>> BreakIfHeldBy(const StateStorage& storage,
                                                   const EnvironmentRef& env,
                                                   const std::string& run_id) override;

 private:
  kube::KubeApi& api_;
};

// Each storage type's breaker in turn (each answers nothing for a storage not its own); the
// breakers are their owner's, and outlive this.
class StateLocksOfEachStorage final : public LeftStateLocks {
 public:
  void Add(LeftStateLocks& locks) { each_.push_back(&locks); }
  Result<std::optional<std::string>> BreakIfHeldBy(const StateStorage& storage,
                                                   const EnvironmentRef& env,
                                                   const std::string& run_id) override;

 private:
  std::vector<LeftStateLocks*> each_;
};

}  // namespace berth::server
