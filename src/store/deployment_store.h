// Deployments as berthd keeps them: ordered per environment, moved only along the state
// machine of core/deployment_state.h, every transition timestamped and kept, and at most one
// holding its environment at a time (the database itself refuses a second, so two berthd
// processes cannot both start one).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/deployment_result.h"
#include "core/deployment_spec.h"
#include "core/deployment_state.h"
#include "core/environment_ref.h"
#include "core/error.h"

namespace berth::store {

struct Deployment {
  std::string org_id, project_id, env_id, id;
  int64_t sequence = 0;  // its place in its environment's order (1, 2, ...)
  DeploymentState state = DeploymentState::kQueued;
  DeploymentSpec spec;
  nlohmann::json transitions = nlohmann::json::array();  // [{state, at, reason}], oldest first
  DeploymentResult result;                               // empty until it has one
  std::string run_id;                                    // its current run, if any
  // The berthd replica whose launcher runs it (store/replica_store.h); empty until one claims
  // it, and for runs from before replicas were recorded.
  std::string owner;
  // Who asked to cancel its run at a replica that does not own it: the owner stops the run.
  std::string cancel_requested_by;
  int64_t created_at = 0, updated_at = 0;  // milliseconds since the epoch

  EnvironmentRef Environment() const { return {org_id, project_id, env_id}; }
};

// An environment's queue, for berthd's metrics.
struct EnvironmentQueue {
  std::string org_id, project_id, env_id;
  int64_t queued = 0;
  int64_t oldest_created_at = 0;  // milliseconds since the epoch
};

// What the dashboard's overview shows of one environment's deployments.
struct EnvironmentActivity {
  std::optional<Deployment> newest;
  std::optional<Deployment> holder;  // the one that holds its queue, if one does
  int64_t queued = 0;
};

// Whose run a run id is, without reading (and opening) the deployment's spec: what the state
// backend needs at each of tofu's requests, and the launchers' events.
struct RunOwner {
  std::string org_id, deployment_id;
  DeploymentState state = DeploymentState::kQueued;
};

struct TransitionChanges {
  std::optional<std::string> run_id;
  std::optional<DeploymentResult> result;
  std::optional<std::string> owner;  // the replica that owns it from now on
  // Refused (kConflict) unless this replica owns it: a replica whose runs were taken over
  // while it was away records nothing about them.
  std::optional<std::string> expected_owner;
};

class DeploymentStore {
 public:
  virtual ~DeploymentStore() = default;
  // Queued, after every deployment its environment has; kFailedPrecondition when the
  // environment does not exist.
  virtual Result<Deployment> Create(Deployment deployment) = 0;
  virtual Result<Deployment> Get(const std::string& org, const std::string& id) = 0;
  // The deployment whose current run this is (run ids are unique across organizations).
  virtual Result<Deployment> GetByRun(const std::string& run_id) = 0;
  virtual Result<RunOwner> OwnerOfRun(const std::string& run_id) = 0;
  // Newest first.
  virtual Result<std::vector<Deployment>> ListForEnvironment(const std::string& org,
                                                             const std::string& project,
                                                             const std::string& env, int limit) = 0;
  // from -> to, if the deployment is still in from (kConflict otherwise, or when to would hold
  // an environment that another deployment holds) and the machine allows it
  // (kFailedPrecondition otherwise).
  virtual Result<Deployment> Transition(const std::string& org, const std::string& id,
                                        DeploymentState from, DeploymentState to,
                                        const std::string& reason,
                                        const TransitionChanges& changes = {}) = 0;
  // The oldest queued deployment of each environment that nothing holds: what may start now,
  // oldest first.
  virtual Result<std::vector<Deployment>> Startable(int limit) = 0;
  // Every deployment that holds its environment (dispatched, running, waiting for approval),
  // in every organization: what a starting berthd must take up again.
  virtual Result<std::vector<Deployment>> Holding() = 0;
  // Gives a run that holds its environment (dispatched or running) to replica to when its owner
  // is still from and from's lease ended before now (milliseconds since the epoch); false when
  // another replica took it first or from came back.
  virtual Result<bool> TakeOver(const std::string& org, const std::string& id,
                                const std::string& from, const std::string& to, int64_t now) = 0;
  // Records who asked to cancel a dispatched or running deployment, for the replica that owns
  // its run; false when it is in neither state.
  virtual Result<bool> RequestCancel(const std::string& org, const std::string& id,
                                     const std::string& who) = 0;
  // How many deployments are in each state (states with none are left out).
  virtual Result<std::vector<std::pair<DeploymentState, int64_t>>> CountByState() = 0;
  // Every environment with queued deployments.
  virtual Result<std::vector<EnvironmentQueue>> Queues() = 0;
  // The activity of each of an organization's environments that has deployments, keyed by
  // "project/env": three indexed queries, however many environments.
  virtual Result<std::map<std::string, EnvironmentActivity>> ActivityOf(const std::string& org) = 0;
  // Removes ended deployments last changed before `before` (milliseconds since the epoch),
  // with their logs, events and artifacts, at most limit of them; the newest ended deployment
  // of each environment stays. How many.
  virtual Result<int64_t> PruneEnded(int64_t before, int limit) = 0;
};

}  // namespace berth::store
