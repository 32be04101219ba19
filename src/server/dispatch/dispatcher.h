// The dispatcher: starts the deployments that may start (the oldest queued one of every
// environment that nothing holds), each with a run token scoped to its environment, on the
// launcher of its environment's runner, and records how each run ended. The store makes it
// safe for several dispatchers (several berthd) to race: one of them wins each deployment.
//
// A deployment has one run, or two when its apply needs approval: a plan run (run id = the
// deployment's id) that stops at waiting_approval with the plan's hash, then, once that hash is
// approved, an apply run (id + "-apply") of exactly that plan file.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/runner_config.h"
#include "crypto/jws.h"
#include "launch/launcher.h"
#include "server/api/deployment_control.h"
#include "server/approved_apply.h"
#include "server/change_feed.h"
#include "server/dispatch/kept_states.h"
#include "server/dispatch/left_state_locks.h"
#include "store/store.h"
#include "sys/logger.h"

namespace berth::server {

class BerthdMetrics;

struct DispatcherOptions {
  std::string url;  // berthd as runners reach it (the gateway's and state backend's base URL)
  std::chrono::seconds token_lifetime{6 * 3600};
  // A run that has not ended this long after it was dispatched is stopped and its deployment
  // failed: no deployment stays executing because a result never arrived.
  std::chrono::seconds run_deadline{6 * 3600};
  int batch = 16;  // deployments started per tick at most
  // A provider mirror folder local runs install providers from, offline (runner --providers);
  // empty: providers come from their registries.
  std::string providers;
  // This berthd's replica id (server/replica.h): the owner of the runs it launches. Runs of a
  // replica whose lease has ended are taken over; its local runs end as RunnerLost.
  std::string replica;
  BerthdMetrics* metrics = nullptr;  // told of every run's end; may be null
  // Breaks the state locks runs that died left in a storage other than berth's own (the
  // kubernetes storage's Lease); null: those stay for tofu's force-unlock.
  LeftStateLocks* left_locks = nullptr;
  ChangeFeed* logs = nullptr;  // notified when a run ends or says something: followers read
  ChangeFeed* wake = nullptr;  // notified when a run ends: its environment is free
  sys::Logger* log = nullptr;  // its decisions; null: not logged
  Clock* clock = nullptr;      // null: the system's
};

// The launcher of each runner type this berthd runs ("local", "kubernetes", ...).
using Launchers = std::map<std::string, launch::Launcher*>;

// The one owner of deployment state changes after a deployment is queued: start, cancel (queued
// or not), approval, and every run's end. With no launchers it starts nothing (an API-only
// berthd) but still cancels.
class Dispatcher : public launch::RunObserver, public DeploymentControl {
 public:
  // launchers is read from the first Recover or Tick on: the launchers themselves report to the
  // dispatcher, so they are made after it and registered before it starts.
  Dispatcher(store::Store& store, const Launchers& launchers, const crypto::Ed25519Signer& signer,
             DispatcherOptions options);

  // At start: the runs this replica left (and runs from before replicas were recorded) are
  // taken up again: re-attached, ended from what they left, or never started again. Runners
  // no replica tracks are removed.
  Result<void> Recover() EXCLUDES(mutex_);
  // Starts what may start now, and about once a second reconciles with the database: ends this
  // replica's runs past their deadline, stops those whose cancel another replica received,
  // and takes over the runs of replicas whose lease ended; every few seconds it pushes again
  // the states runs kept that could not be pushed yet (KeptStates). How many it started.
  int Tick() EXCLUDES(mutex_);
  // Cancels a deployment for who: a queued one, or one waiting for approval, at once; a started
  // one through its run (the runner stops TF cleanly; its end is recorded when it comes), by
  // this replica's launcher or, through the database, the owning replica's; an ended one is
  // refused. The deployment as it is now.
  Result<store::Deployment> Cancel(const std::string& org, const std::string& id,
                                   const std::string& who) override EXCLUDES(mutex_);
  // Starts the apply of the plan a deployment waits with, if plan_hash is that plan's and the
  // environment's state has not moved since it was planned.
  Result<store::Deployment> Approve(const std::string& org, const std::string& id,
                                    const std::string& plan_hash, const std::string& who) override
      EXCLUDES(mutex_);
  // The launcher's report of how a run's runner ended: joined with the result it posted, and
  // recorded.
  void OnRunEnd(const std::string& run_id, const launch::RunnerExit& exit) override
      EXCLUDES(mutex_);
  // What a launcher said about a run that goes on: an event of its deployment, and a line of its
  // log the first time it is said.
  void OnRunEvent(const std::string& run_id, const launch::LaunchEvent& event) override;

 private:
  struct Launch {
    launch::LaunchRequest request;
    launch::Launcher* launcher = nullptr;
  };
  struct RunPlace {
    std::string org;
    launch::Launcher* launcher = nullptr;
    // When this berthd launched it (none for a run taken up after a restart).
    std::optional<std::chrono::steady_clock::time_point> launched;
    bool cancel_sent = false;  // a cancel asked through the database was passed on
  };
  // The launch of a deployment's current run, or why it cannot be launched.
  Result<Launch> Prepare(const store::Deployment& deployment);
  // Launches a dispatched deployment's run and marks it running, or fails it.
  bool Start(const store::Deployment& deployment) EXCLUDES(mutex_);
  // berthd's own state is locked for the whole of a run (its TF runs with -lock=false): one
  // lock and one release a run instead of TF's lock and unlock around each command. Taken
  // again, it is this run's already. kFailedPrecondition, naming the holder, when another has it.
  Result<void> HoldStateLock(const store::Deployment& deployment);
  // The newest version of the deployment's state in berth's backend (0: none, or the state
  // lives elsewhere): what a plan waiting for approval was made against.
  Result<int64_t> StateVersion(const store::Deployment& deployment);
  // What Tick does about once a second (see Tick); what waits for approval past its
  // environment's approval_timeout is cancelled.
  void Reconcile() EXCLUDES(mutex_);
  // Cancels a deployment whose plan has waited for approval longer than its environment's
  // approval_timeout (any replica may: it has no run).
  void CancelIfApprovalTimedOut(const store::Deployment& d, int64_t now_ms);
  // Fails this replica's run that has gone past its deadline, and stops its runner.
  void EndOverdue(const store::Deployment& d) EXCLUDES(mutex_);
  // Passes on a cancel another replica received for a run of this one.
  void CancelAsked(const store::Deployment& d) EXCLUDES(mutex_);
  // A plan run whose runner its launcher keeps for the apply ends when its result is posted
  // (its runner goes on, waiting): that end is recorded here, and the runner released.
  void EndByPostedResult(const store::Deployment& d) EXCLUDES(mutex_);
  // The run is no longer this dispatcher's to watch: where it was, or nullopt when it was not
  // (its end was taken already).
  std::optional<RunPlace> TakeRun(const std::string& run_id) EXCLUDES(mutex_);
  // The one join of a run's end (launch::JoinRunEnd): how its runner ended, with the result it
  // posted to the gateway, for the op this run of d is.
  launch::RunOutcome JoinedEnd(const store::Deployment& d, const std::string& run_id,
                               const launch::RunnerExit& exit);
  // A run another replica took over while this one was away: its runner is stopped, its end
  // is that replica's to record.
  void LetGo(const store::Deployment& d) EXCLUDES(mutex_);
  // The run of a replica whose lease ended becomes this one's: a run on a cluster is adopted
  // and watched from here; a local one ended as RunnerLost (its machine may be gone).
  void TakeOver(const store::Deployment& d, int64_t now_ms) EXCLUDES(mutex_);
  // Whether some replica still tracks the run: its deployment holds its environment.
  bool Held(const std::string& run_id);
  // Records the end of this replica's run: its token retired, its locks released, the state
  // it kept pushed (KeptStates), the deployment moved on (or to waiting_approval after a plan that
  // needs it); counted, with its duration when this berthd launched it.
  void RecordEnd(const store::Deployment& d, const std::string& run_id,
                 const launch::RunOutcome& outcome,
                 std::optional<std::chrono::steady_clock::time_point> launched,
                 bool release_lost_locks);
  // The state locks a run that has ended still holds are released: the one berthd took for it,
  // and any its TF left (its runner was killed mid-apply, say), each of those with an event on
  // its deployment. A lost runner's are kept unless release_lost: it may still be running,
  // with a token that is still good.
  void ReleaseStateLocks(const store::Deployment& d, const std::string& run_id,
                         const launch::RunOutcome& outcome, bool release_lost);
  // Moves a deployment from one state to another; a refusal (another berthd moved it first,
  // or the state machine forbids it) is logged, never dropped unseen. The moved deployment, or
  // nothing.
  std::optional<store::Deployment> Move(const store::Deployment& d, DeploymentState from,
                                        DeploymentState to, const std::string& reason,
                                        const store::TransitionChanges& changes = {});

  store::Store& store_;
  const Launchers& launchers_;
  const crypto::Ed25519Signer& signer_;
  const DispatcherOptions options_;
  sys::Logger& log_;
  Clock& clock_;
  Mutex mutex_;
  std::map<std::string, RunPlace> runs_ GUARDED_BY(mutex_);  // by run id
  std::chrono::steady_clock::time_point next_reconcile_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point next_prune_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point next_settle_ GUARDED_BY(mutex_);
  KeptStates kept_states_;
};

}  // namespace berth::server
