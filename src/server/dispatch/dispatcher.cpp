#include "server/dispatch/dispatcher.h"

#include "core/time_format.h"
#include "crypto/random.h"
#include "server/dispatch/backend_config.h"
#include "server/metrics.h"
#include "server/run_inputs.h"
#include "server/runner_resolution.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

constexpr std::chrono::seconds kDeadlineCheckEvery{5};

std::string StateKey(const store::Deployment& d) {
  return d.org_id + "/" + d.project_id + "/" + d.env_id;
}

bool PlanOnly(const store::Deployment& d) {
  return d.spec.value("op", "") == "plan" || d.spec.value("plan_only", false);
}

bool NeedsApproval(const store::Deployment& d) {
  return !PlanOnly(d) && d.spec.value("approval", json::object()).value("required", false);
}

// What the deployment's current run does.
std::string RunOp(const store::Deployment& d) {
  if (PlanOnly(d) || (NeedsApproval(d) && d.run_id != ApplyRunId(d.id))) return "plan";
  return d.spec.value("op", "plan");
}

// Where a dispatcher without a log writes: nowhere.
sys::Logger& Silent() {
  static sys::Logger silent(sys::Logger::Format::kText, 0, -1);
  return silent;
}

std::string WithoutPrefix(const std::string& hash) {
  return hash.starts_with("sha256:") ? hash.substr(7) : hash;
}

json OutcomeJson(const launch::RunOutcome& outcome) {
  json out = {{"succeeded", outcome.succeeded}, {"exit_code", outcome.exit_code}};
  if (!outcome.error_kind.empty()) {
    out["error"] = {{"kind", outcome.error_kind}, {"message", outcome.message}};
  }
  if (outcome.result) out["run"] = *outcome.result;
  if (!outcome.image_id.empty()) out["image_id"] = outcome.image_id;
  return out;
}

}  // namespace

std::string ApplyRunId(const std::string& deployment_id) { return deployment_id + "-apply"; }

Dispatcher::Dispatcher(store::Store& store, Launchers launchers,
                       const crypto::Ed25519Signer& signer, DispatcherOptions options)
    : store_(store),
      launchers_(std::move(launchers)),
      signer_(signer),
      options_(std::move(options)),
      log_(options_.log ? *options_.log : Silent()),
      clock_(options_.clock ? *options_.clock : SystemClock::Instance()) {}

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
  auto versions = store_.States().Versions(StateKey(d));
  if (!versions) return versions.error();
  return versions->empty() ? int64_t{0} : versions->back().version;
}

Result<Dispatcher::Launch> Dispatcher::Prepare(const store::Deployment& d) {
  auto runner_id = ResolveRunner(store_, d.org_id, d.project_id, d.env_id);
  if (!runner_id) return runner_id.error();
  auto runner = store_.Get(store::Kind::kRunner, d.org_id, "", *runner_id);
  if (!runner) return runner.error();
  std::string type = runner->columns["runner_type"].value_or("");
  auto launcher = launchers_.find(type);
  if (launcher == launchers_.end() || launcher->second == nullptr)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "runner " + *runner_id + " is of type " + type +
                         ", which this berthd does not launch (start it with that launcher "
                         "configured)");
  std::string path = d.spec.value("source", json::object()).value("path", "");
  if (!path.empty() && type != "local")
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a folder on the server runs on local runners only; runner " + *runner_id +
                         " is " + type + ": deploy a bundle");
  std::string url = launcher->second->BerthdUrlForRunners().value_or(options_.url);
  auto backend = RenderBackend(runner->body.value("state_storage_configuration", json::object()),
                               {d.org_id, d.project_id, d.env_id}, url, type != "local");
  if (!backend) return backend.error();

  std::string scope = StateKey(d);
  int64_t now = clock_.WallSeconds();
  auto token =
      crypto::MintRunToken({d.run_id, std::string(crypto::kRunTokenAudience), now,
                            now + options_.token_lifetime.count(), crypto::RandomToken(16), scope},
                           signer_);
  if (!token) return token.error();
  std::string op = RunOp(d);
  launch::LaunchRequest request{
      .run_id = d.run_id, .revision = "1", .runner_id = *runner_id, .token = *token};
  RunnerInvocation& run = request.invocation;
  run.op = op;
  run.gateway = url;
  run.run_id = d.run_id;
  run.inputs_hash = InputsHash(RenderInputs(d));
  run.state_backend = backend->type;
  run.backend_config = backend->config;
  run.providers = options_.providers;
  // A folder on the server (embedded berthd) is read in place; a bundle comes from the gateway.
  run.module = path;
  // An approved plan may delete what its summary showed the approver; a destroy deletes.
  bool approved = d.run_id == ApplyRunId(d.id);
  if (approved) run.approved_plan = d.result.value("plan", json::object()).value("hash", "");
  bool destroy = d.spec.value("op", "") == "destroy";
  run.plan_destroy = destroy && op == "plan";
  run.allow_destroy = destroy || approved || d.spec.value("allow_destroy", false);
  request.runner_configuration = runner->body.value("runner_configuration", json::object());
  // The labels snapshotted when it was created (the runner-spec ones override the Pod's).
  const json labels = d.spec.value("labels", json::object());
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) request.labels[key] = value.get<std::string>();
  }
  return Launch{std::move(request), launcher->second};
}

void Dispatcher::OnRunEvent(const std::string& run_id, const launch::LaunchEvent& event) {
  auto d = store_.Deployments().GetByRun(run_id);
  if (!d) return;  // the runner of a run no deployment has (an untracked one being stopped)
  store::DeploymentEvent e{.run_id = run_id,
                           .type = event.warning ? "Warning" : "Normal",
                           .reason = event.reason,
                           .message = event.message};
  log_.Info("launcher event", {{"org", d->org_id},
                               {"deployment", d->id},
                               {"run", run_id},
                               {"type", e.type},
                               {"reason", e.reason},
                               {"message", e.message}});
  auto stored = store_.DeploymentData().AppendEvent(d->org_id, d->id, e);
  if (!stored) {
    log_.Error("event not stored", {{"deployment", d->id}, {"why", stored.error().message}});
    return;
  }
  if (stored->count > 1) return;
  // Numbered by the event's place, under a name no runner uses: stored once, whoever retries.
  auto logged = store_.DeploymentData().AppendLog(
      d->org_id, d->id, run_id + "/events", stored->position,
      "[berth] " + e.type + " " + e.reason + ": " + e.message + "\n");
  if (!logged)
    log_.Error("event not logged", {{"deployment", d->id}, {"why", logged.error().message}});
}

void Dispatcher::ReleaseStateLocks(const std::string& run_id, const launch::RunOutcome& outcome) {
  // A lost runner may still be running (a node cut off, not dead): its lock stays for an
  // operator to judge rather than let two writers meet.
  if (outcome.error_kind == launch::kRunnerLost) return;
  auto released = store_.States().ReleaseLocksOf(run_id);
  if (!released) {
    log_.Error("state locks not released", {{"run", run_id}, {"why", released.error().message}});
    return;
  }
  for (const std::string& key : *released) {
    OnRunEvent(run_id, {.reason = "StateLockReleased",
                        .message = "the run ended holding the state lock of " + key +
                                   "; berth released it so that the next deployment can run",
                        .warning = false});
  }
}

Result<void> Dispatcher::Recover() {
  auto holding = store_.Deployments().Holding();
  if (!holding) return holding.error();
  std::map<launch::Launcher*, std::vector<launch::LaunchRequest>> known;
  for (const auto& [type, launcher] : launchers_) known[launcher];  // each cleans up its own
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval) continue;  // no run: it waits for a person
    auto launch = Prepare(d);
    if (!launch) {
      Move(d, d.state, S::kFailed, "cannot take it up again: " + launch.error().message);
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
    if (auto recovered = launcher->Recover(requests); !recovered) return recovered.error();
  }
  return {};
}

bool Dispatcher::Start(const store::Deployment& d) {
  auto launch = Prepare(d);
  Result<void> launched = launch.has_error() ? Result<void>(launch.error()) : Result<void>();
  if (launch) {
    // Known before the launch: a run may end before Launch returns.
    {
      MutexLock lock(mutex_);
      runs_[d.run_id] = {d.org_id, launch->launcher, clock_.Now()};
    }
    launched = launch->launcher->Launch(launch->request);
  }
  if (!launched) {
    {
      MutexLock lock(mutex_);
      runs_.erase(d.run_id);
    }
    log_.Warn("launch failed",
              {{"org", d.org_id}, {"deployment", d.id}, {"why", launched.error().message}});
    Move(d, S::kDispatched, S::kFailed, launched.error().message);
    return false;
  }
  log_.Info("run launched", {{"org", d.org_id},
                             {"deployment", d.id},
                             {"run", d.run_id},
                             {"runner", launch->request.runner_id},
                             {"op", launch->request.invocation.op}});
  // Refused when OnRunEnd moved it on already (the run was that quick): expected, not logged,
  // and no read first to find out.
  (void)store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning,
                                        "runner started");
  return true;
}

int Dispatcher::Tick() {
  EndOverdueRuns();
  auto startable = store_.Deployments().Startable(options_.batch);
  if (!startable) return 0;
  int started = 0;
  for (const store::Deployment& d : *startable) {
    // Another dispatcher may win this one: then it is theirs.
    auto claimed = store_.Deployments().Transition(d.org_id, d.id, S::kQueued, S::kDispatched, "",
                                                   {.run_id = d.id});
    if (claimed && Start(*claimed)) ++started;
  }
  return started;
}

void Dispatcher::EndOverdueRuns() {
  {
    MutexLock lock(mutex_);
    auto now = clock_.Now();
    if (now < next_deadline_check_) return;
    next_deadline_check_ = now + kDeadlineCheckEvery;
  }
  auto holding = store_.Deployments().Holding();
  if (!holding) return;
  int64_t cutoff = clock_.WallMillis() - std::chrono::milliseconds(options_.run_deadline).count();
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval || d.updated_at > cutoff) continue;
    auto failed = store_.Deployments().Transition(
        d.org_id, d.id, d.state, S::kFailed,
        "deadline: run " + d.run_id + " had not ended " +
            std::to_string(options_.run_deadline.count()) + " s after it started");
    if (!failed) continue;
    log_.Warn("run past its deadline",
              {{"org", d.org_id}, {"deployment", d.id}, {"run", d.run_id}});
    launch::Launcher* launcher = nullptr;
    {
      MutexLock lock(mutex_);
      if (auto it = runs_.find(d.run_id); it != runs_.end()) launcher = it->second.launcher;
      runs_.erase(d.run_id);
    }
    if (launcher) (void)launcher->Cancel(d.run_id);  // it may be gone already
  }
}

Result<void> Dispatcher::Cancel(const std::string& org, const std::string& id) {
  auto d = store_.Deployments().Get(org, id);
  if (!d) return d.error();
  if (d->state == S::kWaitingApproval) {
    auto cancelled = store_.Deployments().Transition(org, id, S::kWaitingApproval, S::kCancelled,
                                                     "cancelled before approval");
    if (!cancelled) return cancelled.error();
    return {};
  }
  launch::Launcher* launcher = nullptr;
  {
    MutexLock lock(mutex_);
    if (auto it = runs_.find(d->run_id); it != runs_.end()) launcher = it->second.launcher;
  }
  if (launcher == nullptr)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "deployment " + id + " has no run this berthd started");
  return launcher->Cancel(d->run_id);
}

Result<store::Deployment> Dispatcher::Approve(const std::string& org, const std::string& id,
                                              const std::string& plan_hash,
                                              const std::string& who) {
  auto d = store_.Deployments().Get(org, id);
  if (!d) return d.error();
  if (d->state != S::kWaitingApproval)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "deployment " + id + " is " + std::string(DeploymentStateName(d->state)) +
                         ", not waiting_approval");
  std::string planned = d->result.value("plan", json::object()).value("hash", "");
  if (WithoutPrefix(plan_hash) != WithoutPrefix(planned))
    return MakeError(ErrorKind::kConflict,
                     "plan_hash " + plan_hash + " is not the plan deployment " + id +
                         " waits with (" + planned + "); nothing was applied");
  auto now_version = StateVersion(*d);
  if (!now_version) return now_version.error();
  int64_t planned_version = d->result.value("state_version", int64_t{0});
  if (*now_version != planned_version)
    return MakeError(ErrorKind::kConflict,
                     "the plan is stale: the environment's state moved from version " +
                         std::to_string(planned_version) + " to " + std::to_string(*now_version) +
                         " since it was planned; deploy again");
  auto dispatched = store_.Deployments().Transition(org, id, S::kWaitingApproval, S::kDispatched,
                                                    "plan " + planned + " approved by " + who,
                                                    {.run_id = ApplyRunId(id)});
  if (!dispatched) return dispatched.error();
  Start(*dispatched);
  return store_.Deployments().Get(org, id);
}

void Dispatcher::OnRunEnd(const std::string& run_id, const launch::RunOutcome& reported) {
  std::string org;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return;
    org = it->second.org;
    if (options_.metrics && it->second.launched) {
      options_.metrics->RunEnded(reported.succeeded ? "succeeded" : reported.error_kind,
                                 clock_.Now() - *it->second.launched);
    }
    runs_.erase(it);
  }
  auto d = store_.Deployments().GetByRun(run_id);
  if (!d || d->org_id != org) return;
  // The result the runner posted through the gateway is whole; a termination log is capped.
  launch::RunOutcome outcome = reported;
  if (auto posted = store_.DeploymentData().GetArtifact(org, d->id, "result:" + run_id)) {
    json result = json::parse(posted->content, nullptr, false);
    if (result.is_object()) outcome.result = result;
  }
  // A deployment still dispatched (its launch raced its end) is moved on first.
  log_.Info("run ended", {{"org", org},
                          {"deployment", d->id},
                          {"run", run_id},
                          {"outcome", reported.succeeded ? "succeeded" : reported.error_kind},
                          {"message", reported.message}});
  if (d->state == S::kDispatched) Move(*d, S::kDispatched, S::kRunning, "runner started");
  ReleaseStateLocks(run_id, reported);
  if (outcome.succeeded && NeedsApproval(*d) && run_id != ApplyRunId(d->id)) {
    json plan = outcome.result ? outcome.result->value("plan", json::object()) : json::object();
    auto version = StateVersion(*d);
    Move(*d, S::kRunning, S::kWaitingApproval, "plan " + plan.value("hash", "") + " ready",
         {.result = json{{"plan", plan},
                         {"state_version", version ? *version : 0},
                         {"plan_run", OutcomeJson(outcome)}}});
    return;
  }
  S to = outcome.succeeded                                ? S::kSucceeded
         : outcome.error_kind == launch::kRunnerCancelled ? S::kCancelled
                                                          : S::kFailed;
  std::string reason = outcome.succeeded ? "" : outcome.error_kind + ": " + outcome.message;
  json result = OutcomeJson(outcome);
  if (d->result.is_object() && d->result.contains("plan"))
    result["approved_plan"] = d->result["plan"];
  Move(*d, S::kRunning, to, reason, {.result = result});
}

}  // namespace berth::server
