#include "server/dispatch/dispatcher.h"

#include <fmt/format.h>

#include <array>
#include <set>

#include "core/duration.h"
#include "core/time_format.h"
#include "launch/run_outcome.h"
#include "server/dispatch/backend_config.h"
#include "server/dispatch/deployment_events.h"
#include "server/live_run.h"
#include "server/metrics.h"
#include "server/run_inputs.h"
#include "server/runner_resolution.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

constexpr std::chrono::seconds kReconcileEvery{1};
// What ended runs left on this machine (local run folders) is pruned this often, beyond the
// newest kKeptEndedRuns of each launcher (docs/reliability.md).
constexpr std::chrono::minutes kPruneEvery{1};
constexpr size_t kKeptEndedRuns = 50;
// Kept states the store could not take yet are pushed again this often.
constexpr std::chrono::seconds kSettleEvery{5};

// Where a dispatcher without a log writes: nowhere.
sys::Logger& Silent() {
  static sys::Logger silent(sys::Logger::Format::kText, 0, -1);
  return silent;
}

std::string WithoutPrefix(const std::string& hash) {
  return hash.starts_with("sha256:") ? hash.substr(7) : hash;
}

// Wakes what waits on the feeds when a report has been taken in, however that returns.
class NotifyWhenDone {
 public:
  explicit NotifyWhenDone(ChangeFeed* first, ChangeFeed* second = nullptr)
      : feeds_{first, second} {}
  NotifyWhenDone(const NotifyWhenDone&) = delete;
  NotifyWhenDone& operator=(const NotifyWhenDone&) = delete;
  ~NotifyWhenDone() {
    for (ChangeFeed* feed : feeds_) {
      if (feed != nullptr) feed->Notify();
    }
  }

 private:
  std::array<ChangeFeed*, 2> feeds_;
};

RunEnd EndOf(const launch::RunOutcome& outcome) {
  return {.succeeded = outcome.succeeded,
          .exit_code = outcome.exit_code,
          .error_kind = std::string(outcome.FailureName()),
          .error_message = outcome.succeeded ? std::string() : outcome.message,
          .run = outcome.result,
          .image_id = outcome.image_id};
}

}  // namespace

Dispatcher::Dispatcher(store::Store& store, const Launchers& launchers,
                       const crypto::Ed25519Signer& signer, DispatcherOptions options)
    : store_(store),
      launchers_(launchers),
      signer_(signer),
      options_(std::move(options)),
      log_(options_.log ? *options_.log : Silent()),
      clock_(options_.clock ? *options_.clock : SystemClock::Instance()),
      kept_states_(store_, log_) {}

std::optional<store::Deployment> Dispatcher::Move(const store::Deployment& d, S from, S to,
                                                  const std::string& reason,
                                                  const store::TransitionChanges& changes) {
  auto moved = store_.Deployments().Transition(d.org_id, d.id, from, to, reason, changes);
  if (!moved) {
    log_.Warn("transition refused", {{"org", d.org_id},
                                     {"deployment", d.id},
                                     {"from", std::string(DeploymentStateName(from))},
                                     {"to", std::string(DeploymentStateName(to))},
                                     {"why", moved.error().message}});
    return std::nullopt;
  }
  log_.V(1, "transition",
         {{"org", d.org_id},
          {"deployment", d.id},
          {"to", std::string(DeploymentStateName(to))},
          {"reason", reason}});
  return *moved;
}

Result<int64_t> Dispatcher::StateVersion(const store::Deployment& d) {
  auto versions = store_.States().Versions(d.Environment().Key());
  if (!versions) return versions.error();
  return versions->empty() ? int64_t{0} : versions->back().version;
}

Result<Dispatcher::Launch> Dispatcher::Prepare(const store::Deployment& d) {
  auto runner_id = ResolveRunner(store_, d.org_id, d.project_id, d.env_id);
  if (!runner_id) return runner_id.error();
  auto runner = store_.Get(store::Kind::kRunner, d.org_id, "", *runner_id);
  if (!runner) return runner.error();
  const std::string type = runner->columns["runner_type"].value_or("");
  const std::optional<RunnerType> runner_type = ParseRunnerType(type);
  if (!runner_type)
    return MakeError(ErrorKind::kFailedPrecondition, "runner " + *runner_id + " is of type " +
                                                         type + ", which berth does not know");
  // A runner saved before berthd refused what it does not honour yet names a cluster or
  // credentials its runs would not get: they are not run elsewhere instead.
  if (auto honoured = CheckHonoured(*runner_id, *runner_type); !honoured) return honoured.error();
  auto launcher = launchers_.find(type);
  if (launcher == launchers_.end() || launcher->second == nullptr)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "runner " + *runner_id + " is of type " + type +
                         ", which this berthd does not launch (start it with that launcher "
                         "configured)");
  const bool local = *runner_type == RunnerType::kLocal;
  const std::string& path = d.spec.source_path;
  if (!path.empty() && !local)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a folder on the server runs on local runners only; runner " + *runner_id +
                         " is " + type + ": deploy a bundle");
  auto settings = launch::ParseRunnerSettings(
      *runner_type, runner->body.value("runner_configuration", json::object()));
  if (!settings) {
    Error error = settings.error();
    error.message = "runner " + *runner_id + " as saved: " + error.message;
    return error;
  }
  std::string url = launcher->second->BerthdUrlForRunners(*settings).value_or(options_.url);
  auto storage = ParseStateStorage(runner->body.value("state_storage_configuration", json()));
  if (!storage) {
    Error error = storage.error();
    error.message = "runner " + *runner_id + " as saved: " + error.message;
    return error;
  }
  const BackendSettings backend = RenderBackend(*storage, d.Environment(), url, !local);

  auto token = MintRunTokenOf(d, d.run_id, options_.token_lifetime, signer_, clock_.WallSeconds());
  if (!token) return token.error();
  std::string op = RunOpOf(d);
  launch::LaunchRequest request{.run_id = d.run_id,
                                .revision = "1",
                                .org_id = d.org_id,
                                .environment = d.project_id + "/" + d.env_id,
                                .runner_id = *runner_id,
                                .token = *token};
  RunnerInvocation& run = request.invocation;
  run.op = op;
  run.gateway = url;
  run.run_id = d.run_id;
  run.inputs_hash = InputsHash(RenderInputs(d));
  run.state_backend = backend.type;
  run.backend_config = backend.config;
  // berthd's own: HoldStateLock holds it.
  run.lock = !std::holds_alternative<BerthStateStorage>(*storage);
  run.providers = options_.providers;
  // A folder on the server (embedded berthd) is read in place; a bundle comes from the gateway.
  run.module = path;
  // An approved plan may delete what its summary showed the approver; a destroy deletes.
  bool approved = d.run_id == ApplyRunId(d.id);
  if (approved) {
    // The plan file's bytes as the plan run uploaded them: an apply of exactly those skips its
    // show -json (its provider schemas) and the guard, both done at plan time.
    auto plan = ApprovedPlanOf(store_, d);
    if (!plan) return plan.error();
    run.approved_plan = plan->hash;
    run.approved_plan_sha256 = plan->sha256;
    request.plan_run_id = d.id;  // a deployment's first run has its id
    request.continues_plan_runner = static_cast<bool>(HandedOver(store_, d, d.run_id));
  }
  request.approval_follows = d.spec.NeedsApproval() && !approved;
  auto env = store_.Get(store::Kind::kEnvironment, d.org_id, d.project_id, d.env_id);
  if (!env) return env.error();
  run.state_encryption = env->body.value("state_encryption", "none") == "berth";
  // Logs only their owner reads: the environment's recipient, else its project's.
  run.log_recipient = env->body.value("log_recipient", "");
  if (run.log_recipient.empty()) {
    auto project = store_.Get(store::Kind::kProject, d.org_id, "", d.project_id);
    if (!project) return project.error();
    run.log_recipient = project->body.value("log_recipient", "");
  }
  bool destroy = d.spec.op == DeploymentOp::kDestroy;
  run.plan_destroy = destroy && op == "plan";
  run.allow_destroy = destroy || approved || d.spec.allow_destroy;
  request.runner = std::move(*settings);
  // The labels snapshotted when it was created (the runner-spec ones override the Pod's).
  request.labels = d.spec.labels;
  return Launch{std::move(request), launcher->second};
}

void Dispatcher::OnRunEvent(const std::string& run_id, const launch::LaunchEvent& event) {
  NotifyWhenDone notify(options_.logs);  // followers see the event's line
  auto owner = store_.Deployments().OwnerOfRun(run_id);
  if (!owner) return;  // the runner of a run no deployment has (an untracked one being stopped)
  RecordDeploymentEvent(store_, log_, owner->org_id, owner->deployment_id, run_id, event);
}

void Dispatcher::ReleaseStateLocks(const store::Deployment& d, const std::string& run_id,
                                   const launch::RunOutcome& outcome, bool release_lost) {
  // A lost runner may still be running (a node cut off, not dead): its lock stays for an
  // operator to judge rather than let two writers meet.
  if (outcome.EndedAs(launch::RunnerEnd::kLost) && !release_lost) return;
  auto released = store_.States().ReleaseLocksOf(run_id);
  if (!released) {
    log_.Error("state locks not released", {{"run", run_id}, {"why", released.error().message}});
    return;
  }
  for (const store::ReleasedLock& lock : *released) {
    if (lock.id == run_id) continue;  // HoldStateLock's: every run ends holding it
    OnRunEvent(run_id, {.reason = "StateLockReleased",
                        .message = "the run ended holding the state lock of " + lock.key +
                                   "; berth released it so that the next deployment can run",
                        .warning = false});
  }
  // A run that succeeded had tofu unlock what it locked: no storage to read at every end.
  if (options_.left_locks == nullptr || outcome.succeeded) return;
  auto storage = StateStorageOf(store_, d.org_id, d.project_id, d.env_id);
  auto broken = storage ? options_.left_locks->BreakIfHeldBy(*storage, d.Environment(), run_id)
                        : Result<std::optional<std::string>>(storage.error());
  if (!broken) {
    log_.Error("left state lock not checked", {{"run", run_id}, {"why", broken.error().message}});
  } else if (*broken) {
    OnRunEvent(run_id, {.reason = "StateLockReleased",
                        .message = "the run ended holding " + **broken +
                                   "; berth released it so that the next deployment can run",
                        .warning = false});
  }
}

Result<void> Dispatcher::Recover() {
  if (launchers_.empty()) return {};  // an API-only berthd: what is held is another's
  auto holding = store_.Deployments().Holding();
  if (!holding) return holding.error();
  std::map<launch::Launcher*, std::vector<launch::LaunchRequest>> known;
  for (const auto& [type, launcher] : launchers_) known[launcher];  // each cleans up its own
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval) continue;  // no run: it waits for a person
    // Another replica's run is taken over by Reconcile once its lease has ended; one from
    // before replicas were recorded is this one's if no other took it first.
    if (d.owner != options_.replica) {
      auto taken = d.owner.empty() ? store_.Deployments().TakeOver(
                                         d.org_id, d.id, "", options_.replica, clock_.WallMillis())
                                   : Result<bool>(false);
      if (!taken || !*taken) continue;
    }
    auto launch = Prepare(d);
    // One still dispatched may have died between its dispatch and the state lock berthd holds
    // for it: taken again (the same lock of the same run is a retry), before its runner starts.
    Result<void> ready = launch.has_error() ? Result<void>(launch.error()) : Result<void>();
    if (ready && d.state == S::kDispatched && !launch->request.invocation.lock)
      ready = HoldStateLock(d);
    if (!ready) {
      Move(d, d.state, S::kFailed, "cannot take it up again: " + ready.error().message);
      continue;
    }
    {
      MutexLock lock(mutex_);
      runs_[d.run_id] = {d.org_id, launch->launcher};
    }
    if (d.state == S::kDispatched)
      Move(d, S::kDispatched, S::kRunning, "taken up again after a restart");
    known[launch->launcher].push_back(std::move(launch->request));
  }
  for (auto& [launcher, requests] : known) {
    auto recovered =
        launcher->Recover(requests, [this](const std::string& run_id) { return Held(run_id); });
    if (!recovered) return recovered.error();
  }
  return {};
}

bool Dispatcher::Held(const std::string& run_id) {
  auto owner = store_.Deployments().OwnerOfRun(run_id);
  // Unsure (the database did not answer): kept, an orphan is removed at a later start.
  if (!owner) return owner.error().kind != ErrorKind::kNotFound;
  return owner->state == S::kDispatched || owner->state == S::kRunning;
}

Result<void> Dispatcher::HoldStateLock(const store::Deployment& d) {
  const std::string key = d.Environment().Key();
  const std::string created = FormatRfc3339(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(clock_.WallMillis())));
  // TF's LockInfo, as a TF of another run that finds it locked prints it.
  const json info = {
      {"ID", d.run_id},
      {"Operation", RunOpOf(d) == "plan" ? "OperationTypePlan" : "OperationTypeApply"},
      {"Info", "held by berthd for run " + d.run_id + " of deployment " + d.id},
      {"Who", "berthd@" + d.run_id},
      {"Version", ""},
      {"Created", created},
      {"Path", ""}};
  auto locked = store_.States().Lock(key, {d.run_id, info.dump(), 0, d.run_id});
  if (locked || locked.error().reason != "Locked") return locked;
  json holder = json::parse(locked.error().context, nullptr, false);
  std::string who = holder.is_object() ? holder.value("Who", "") : "";
  return MakeError(ErrorKind::kFailedPrecondition,
                   "the state of " + key + " is locked" + (who.empty() ? "" : " by " + who) +
                       " (a runner that was lost may still be writing it): once it is surely "
                       "stopped, `berth state unlock " +
                       d.env_id + " --project " + d.project_id + " --reason ...` frees it");
}

bool Dispatcher::Start(const store::Deployment& d) {
  auto launch = Prepare(d);
  Result<void> launched = launch.has_error() ? Result<void>(launch.error()) : Result<void>();
  if (launched && !launch->request.invocation.lock) launched = HoldStateLock(d);
  if (launched) {
    // Known before the launch: a run may end before Launch returns.
    {
      MutexLock lock(mutex_);
      runs_[d.run_id] = {d.org_id, launch->launcher, clock_.Now()};
    }
    launch::LaunchRequest& request = launch->request;
    if (!request.plan_run_id.empty() && !request.continues_plan_runner &&
        launch->launcher->ContinuesIn(request.plan_run_id)) {
      // Marked first: the kept runner is handed the apply only once it is marked.
      request.continues_plan_runner = static_cast<bool>(MarkHandedOver(store_, d, d.run_id));
    }
    auto launching = clock_.Now();
    launched = launch->launcher->Launch(request);
    if (launched && options_.metrics) {
      options_.metrics->DeploymentStep(
          "launch", std::chrono::duration<double>(clock_.Now() - launching).count());
    }
  }
  if (!launched) {
    {
      MutexLock lock(mutex_);
      runs_.erase(d.run_id);
    }
    log_.Warn("launch failed",
              {{"org", d.org_id}, {"deployment", d.id}, {"why", launched.error().message}});
    // A lock HoldStateLock took for a run that never started.
    if (auto released = store_.States().ReleaseLocksOf(d.run_id); !released)
      log_.Error("state lock not released", {{"run", d.run_id}, {"why", released.error().message}});
    Move(d, S::kDispatched, S::kFailed, launched.error().message);
    return false;
  }
  log_.Info("run launched", {{"org", d.org_id},
                             {"deployment", d.id},
                             {"run", d.run_id},
                             {"runner", launch->request.runner_id},
                             {"op", launch->request.invocation.op}});
  IgnoreError(store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning,
                                              "runner started"),
              "refused when OnRunEnd moved it on already (the run was that quick): expected, "
              "not logged, and no read first to find out");
  return true;
}

int Dispatcher::Tick() {
  if (launchers_.empty()) return 0;
  Reconcile();
  auto startable = store_.Deployments().Startable(options_.batch);
  if (!startable) return 0;
  int started = 0;
  for (const store::Deployment& d : *startable) {
    // Another dispatcher may win this one: then it is theirs.
    auto claimed = store_.Deployments().Transition(d.org_id, d.id, S::kQueued, S::kDispatched, "",
                                                   {.run_id = d.id, .owner = options_.replica});
    if (!claimed) continue;
    // The first run's wait in the queue (an approved apply's run waited for a person instead).
    if (options_.metrics)
      options_.metrics->DeploymentStep(
          "queue", static_cast<double>(clock_.WallMillis() - claimed->created_at) / 1000);
    if (Start(*claimed)) ++started;
  }
  return started;
}

void Dispatcher::Reconcile() {
  bool prune = false, settle = false;
  {
    MutexLock lock(mutex_);
    auto now = clock_.Now();
    if (now < next_reconcile_) return;
    next_reconcile_ = now + kReconcileEvery;
    prune = now >= next_prune_;
    if (prune) next_prune_ = now + kPruneEvery;
    settle = now >= next_settle_;
    if (settle) next_settle_ = now + kSettleEvery;
  }
  if (settle) {
    NotifyWhenDone notify(options_.logs);  // a rescue's event is a line of its log
    kept_states_.SettlePending();
  }
  if (prune) {
    std::set<launch::Launcher*> launchers;
    for (const auto& [type, launcher] : launchers_) launchers.insert(launcher);
    for (launch::Launcher* launcher : launchers)
      launcher->PruneEnded([this](const std::string& run_id) { return Held(run_id); },
                           kKeptEndedRuns);
  }
  auto holding = store_.Deployments().Holding();
  if (!holding) return;
  auto replicas = store_.Replicas().List();
  if (!replicas) return;
  std::map<std::string, int64_t> lease_until;
  for (const store::ReplicaLease& r : *replicas) lease_until[r.id] = r.lease_until;
  const int64_t now_ms = clock_.WallMillis();
  const int64_t cutoff = now_ms - std::chrono::milliseconds(options_.run_deadline).count();
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval) {  // no run, but maybe a plan forgotten
      CancelIfApprovalTimedOut(d, now_ms);
      continue;
    }
    if (d.owner == options_.replica) {
      if (d.updated_at <= cutoff)
        EndOverdue(d);
      else if (!d.cancel_requested_by.empty())
        CancelAsked(d);
      else
        EndByPostedResult(d);
      continue;
    }
    LetGo(d);
    auto lease = lease_until.find(d.owner);
    if (d.owner.empty() || lease == lease_until.end() || lease->second <= now_ms)
      TakeOver(d, now_ms);
  }
}

void Dispatcher::CancelIfApprovalTimedOut(const store::Deployment& d, int64_t now_ms) {
  auto env = store_.Get(store::Kind::kEnvironment, d.org_id, d.project_id, d.env_id);
  if (!env) return;
  const json& setting = env->body.value("approval_timeout", json());
  if (!setting.is_string()) return;
  auto timeout = ParseDuration(setting.get<std::string>());  // checked when it was saved
  if (!timeout) return;
  int64_t waited = now_ms - d.updated_at;  // since the plan was ready
  if (waited <= std::chrono::duration_cast<std::chrono::milliseconds>(*timeout).count()) return;
  if (Move(d, S::kWaitingApproval, S::kCancelled,
           "approval_timeout: the plan waited longer than " + setting.get<std::string>() +
               " for approval (the environment's approval_timeout)"))
    log_.Info("plan not approved in time", {{"org", d.org_id},
                                            {"deployment", d.id},
                                            {"approval_timeout", setting.get<std::string>()}});
}

void Dispatcher::EndOverdue(const store::Deployment& d) {
  auto failed = store_.Deployments().Transition(d.org_id, d.id, d.state, S::kFailed,
                                                "deadline: run " + d.run_id + " had not ended " +
                                                    std::to_string(options_.run_deadline.count()) +
                                                    " s after it started",
                                                {.expected_owner = options_.replica});
  if (!failed) return;
  log_.Warn("run past its deadline", {{"org", d.org_id}, {"deployment", d.id}, {"run", d.run_id}});
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    if (auto it = runs_.find(d.run_id); it != runs_.end()) launcher = it->second.launcher;
    runs_.erase(d.run_id);
  }
  if (launcher) IgnoreError(launcher->Cancel(d.run_id), "the runner may be gone already");
}

void Dispatcher::CancelAsked(const store::Deployment& d) {
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(d.run_id);
    if (it == runs_.end() || it->second.cancel_sent) return;
    it->second.cancel_sent = true;
    launcher = it->second.launcher;
  }
  log_.Info(
      "cancelling",
      {{"org", d.org_id}, {"deployment", d.id}, {"run", d.run_id}, {"by", d.cancel_requested_by}});
  if (auto stopping = launcher->Cancel(d.run_id); !stopping)
    log_.Warn("cancel failed", {{"deployment", d.id}, {"why", stopping.error().message}});
}

void Dispatcher::EndByPostedResult(const store::Deployment& d) {
  if (d.state != S::kRunning) return;
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(d.run_id);
    if (it == runs_.end()) return;
    launcher = it->second.launcher;
  }
  if (!launcher->KeptAfterResult(d.run_id)) return;
  auto posted = store_.DeploymentData().GetArtifact(d.org_id, d.id, "result:" + d.run_id);
  if (!posted) return;
  // Its runner goes on, waiting for the apply: nobody saw it exit.
  launch::RunOutcome outcome = launch::JoinRunEnd({}, posted->content, RunOpOf(d));
  auto place = TakeRun(d.run_id);
  if (!place) return;
  launcher->Release(d.run_id);
  RecordEnd(d, d.run_id, outcome, place->launched, /*release_lost_locks=*/false);
}

std::optional<Dispatcher::RunPlace> Dispatcher::TakeRun(const std::string& run_id) {
  MutexLock lock(mutex_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  RunPlace place = std::move(it->second);
  runs_.erase(it);
  return place;
}

launch::RunOutcome Dispatcher::JoinedEnd(const store::Deployment& d, const std::string& run_id,
                                         const launch::RunnerExit& exit) {
  auto posted = store_.DeploymentData().GetArtifact(d.org_id, d.id, "result:" + run_id);
  return launch::JoinRunEnd(
      exit, posted ? std::optional<std::string_view>(posted->content) : std::nullopt,
      RunOpOf(d, run_id));
}

void Dispatcher::LetGo(const store::Deployment& d) {
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(d.run_id);
    if (it == runs_.end()) return;
    launcher = it->second.launcher;
    runs_.erase(it);
  }
  log_.Warn("run taken over by another replica: stopping its runner here",
            {{"org", d.org_id}, {"deployment", d.id}, {"run", d.run_id}, {"replica", d.owner}});
  IgnoreError(launcher->Cancel(d.run_id), "the runner may be gone already");
}

void Dispatcher::TakeOver(const store::Deployment& d, int64_t now_ms) {
  auto taken = store_.Deployments().TakeOver(d.org_id, d.id, d.owner, options_.replica, now_ms);
  if (!taken || !*taken) return;  // another replica was first, or the owner came back
  std::string from = d.owner.empty() ? "an earlier berthd" : "replica " + d.owner;
  log_.Warn("run taken over",
            {{"org", d.org_id}, {"deployment", d.id}, {"run", d.run_id}, {"from", from}});
  store::Deployment mine = d;
  mine.owner = options_.replica;
  auto launch = Prepare(mine);
  if (launch && launch->launcher->SharedAcrossReplicas()) {
    {
      MutexLock lock(mutex_);
      runs_[d.run_id] = {d.org_id, launch->launcher};
    }
    OnRunEvent(d.run_id, {.reason = "RunTakenOver",
                          .message = from + " stopped renewing its lease; replica " +
                                     options_.replica + " watches the run from here",
                          .warning = false});
    if (d.state == S::kDispatched)
      Move(mine, S::kDispatched, S::kRunning, "taken over from " + from);
    // Only this run: what else the launcher finds is other replicas' business.
    auto adopted =
        launch->launcher->Recover({launch->request}, [](const std::string&) { return true; });
    if (!adopted)
      log_.Error("run not adopted", {{"deployment", d.id}, {"why", adopted.error().message}});
    return;
  }
  // Never started again: the runner may have applied already, and may still be running on a
  // machine nobody can reach. Its token is retired, so it can no longer write the state. A
  // result it posted before its replica died says how it ended.
  if (d.state == S::kDispatched) Move(mine, S::kDispatched, S::kRunning, "taken over");
  launch::RunOutcome end = JoinedEnd(
      mine, d.run_id,
      launch::RunnerStopped(launch::RunnerEnd::kLost,
                            from +
                                ", which ran it, stopped renewing its lease: its machine may be "
                                "gone, so the run is not started again" +
                                (launch ? "" : " (" + launch.error().message + ")")));
  RecordEnd(mine, d.run_id, end, std::nullopt, /*release_lost_locks=*/true);
}

Result<store::Deployment> Dispatcher::Cancel(const std::string& org, const std::string& id,
                                             const std::string& who) {
  auto d = store_.Deployments().Get(org, id);
  if (!d) return d.error();
  if (IsTerminal(d->state))
    return MakeError(
        ErrorKind::kFailedPrecondition,
        "deployment " + id + " has ended (" + std::string(DeploymentStateName(d->state)) + ")");
  // No run to stop: the store moves it, or says who moved it first.
  if (d->state == S::kQueued || d->state == S::kWaitingApproval) {
    return store_.Deployments().Transition(
        org, id, d->state, S::kCancelled,
        std::string(d->state == S::kQueued ? "cancelled by " : "cancelled before approval by ") +
            who);
  }
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    if (auto it = runs_.find(d->run_id); it != runs_.end()) launcher = it->second.launcher;
  }
  if (launcher == nullptr) {
    // Another replica runs it: that one stops it when it next reads the database.
    auto asked = store_.Deployments().RequestCancel(org, id, who);
    if (!asked) return asked.error();
    log_.Info("cancel passed to the owning replica",
              {{"org", org}, {"deployment", id}, {"replica", d->owner}, {"by", who}});
    return store_.Deployments().Get(org, id);
  }
  log_.Info("cancelling", {{"org", org}, {"deployment", id}, {"run", d->run_id}, {"by", who}});
  if (auto stopping = launcher->Cancel(d->run_id); !stopping) return stopping.error();
  return store_.Deployments().Get(org, id);
}

Result<store::Deployment> Dispatcher::Approve(const std::string& org, const std::string& id,
                                              const std::string& plan_hash,
                                              const std::string& who) {
  if (launchers_.empty())
    return MakeError(ErrorKind::kFailedPrecondition, "this berthd runs no runners");
  auto d = store_.Deployments().Get(org, id);
  if (!d) return d.error();
  if (d->state != S::kWaitingApproval)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "deployment " + id + " is " + std::string(DeploymentStateName(d->state)) +
                         ", not waiting_approval");
  const std::string planned = d->result.PlanHash();
  if (WithoutPrefix(plan_hash) != WithoutPrefix(planned))
    return MakeError(ErrorKind::kConflict,
                     "plan_hash " + plan_hash + " is not the plan deployment " + id +
                         " waits with (" + planned + "); nothing was applied");
  auto now_version = StateVersion(*d);
  if (!now_version) return now_version.error();
  const int64_t planned_version = d->result.state_version;
  if (*now_version != planned_version)
    return MakeError(ErrorKind::kConflict,
                     "the plan is stale: the environment's state moved from version " +
                         std::to_string(planned_version) + " to " + std::to_string(*now_version) +
                         " since it was planned; deploy again");
  auto dispatched = store_.Deployments().Transition(
      org, id, S::kWaitingApproval, S::kDispatched, "plan " + planned + " approved by " + who,
      {.run_id = ApplyRunId(id), .owner = options_.replica});
  if (!dispatched) return dispatched.error();
  Start(*dispatched);
  return store_.Deployments().Get(org, id);
}

void Dispatcher::OnRunEnd(const std::string& run_id, const launch::RunnerExit& exit) {
  auto place = TakeRun(run_id);
  if (!place) {
    // A run this replica stopped after failing its deployment (its deadline): only now that
    // its runner is gone can nothing write under its locks any more.
    auto ended = store_.Deployments().GetByRun(run_id);
    if (ended && IsTerminal(ended->state) && ended->owner == options_.replica)
      ReleaseStateLocks(*ended, run_id, JoinedEnd(*ended, run_id, exit), /*release_lost=*/false);
    return;
  }
  auto d = store_.Deployments().GetByRun(run_id);
  if (!d || d->org_id != place->org) return;
  if (d->owner != options_.replica) {
    log_.Warn("run ended after another replica took it over: its end is that one's to record",
              {{"deployment", d->id}, {"run", run_id}, {"replica", d->owner}});
    return;
  }
  RecordEnd(*d, run_id, JoinedEnd(*d, run_id, exit), place->launched,
            /*release_lost_locks=*/false);
}

void Dispatcher::RecordEnd(const store::Deployment& d, const std::string& run_id,
                           const launch::RunOutcome& outcome,
                           std::optional<std::chrono::steady_clock::time_point> launched,
                           bool release_lost_locks) {
  // Followers of its log end, and its environment is free for the next deployment.
  NotifyWhenDone notify(options_.logs, options_.wake);
  const std::string& org = d.org_id;
  // Its runner is gone: what still holds its token (a copy a module made) is refused from here.
  if (auto retired = MarkRunEnded(store_, d, run_id); !retired)
    log_.Warn("run token not retired", {{"run", run_id}, {"error", retired.error().ToString()}});
  if (options_.metrics && launched)
    options_.metrics->RunEnded(outcome.succeeded ? "succeeded" : outcome.FailureName(),
                               clock_.Now() - *launched);
  if (options_.metrics && outcome.result) {
    for (const RunStep& step : outcome.result->steps)
      options_.metrics->DeploymentStep(step.name, step.seconds);
  }
  log_.Info("run ended",
            {{"org", org},
             {"deployment", d.id},
             {"run", run_id},
             {"outcome", std::string(outcome.succeeded ? "succeeded" : outcome.FailureName())},
             {"message", outcome.message}});
  const store::TransitionChanges owned{.expected_owner = options_.replica};
  // A deployment still dispatched (its launch raced its end) is moved on first.
  if (d.state == S::kDispatched) Move(d, S::kDispatched, S::kRunning, "runner started", owned);
  ReleaseStateLocks(d, run_id, outcome, release_lost_locks);
  kept_states_.Settle(org, d.id, run_id);
  if (outcome.succeeded && d.spec.NeedsApproval() && run_id != ApplyRunId(d.id)) {
    auto version = StateVersion(d);
    DeploymentResult waiting{.plan = outcome.result ? outcome.result->plan : std::nullopt,
                             .state_version = version ? *version : 0,
                             .plan_run = EndOf(outcome)};
    const std::string reason = "plan " + waiting.PlanHash() + " ready";
    Move(d, S::kRunning, S::kWaitingApproval, reason,
         {.result = std::move(waiting), .expected_owner = options_.replica});
    return;
  }
  S to = outcome.succeeded ? S::kSucceeded : outcome.Cancelled() ? S::kCancelled : S::kFailed;
  std::string reason =
      outcome.succeeded ? "" : fmt::format("{}: {}", outcome.FailureName(), outcome.message);
  // An approved apply's result keeps the plan it applied and how its plan run went.
  DeploymentResult ended{
      .end = EndOf(outcome), .plan = d.result.plan, .plan_run = d.result.plan_run};
  Move(d, S::kRunning, to, reason,
       {.result = std::move(ended), .expected_owner = options_.replica});
}

}  // namespace berth::server
