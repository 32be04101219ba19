#include "server/dispatch/dispatcher.h"

#include "core/time_format.h"
#include "crypto/random.h"
#include "server/dispatch/backend_config.h"
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

std::string WithoutPrefix(const std::string& hash) {
  return hash.starts_with("sha256:") ? hash.substr(7) : hash;
}

json OutcomeJson(const launch::RunOutcome& outcome) {
  json out = {{"succeeded", outcome.succeeded}, {"exit_code", outcome.exit_code}};
  if (!outcome.error_kind.empty()) {
    out["error"] = {{"kind", outcome.error_kind}, {"message", outcome.message}};
  }
  if (outcome.result) out["run"] = *outcome.result;
  return out;
}

}  // namespace

std::string ApplyRunId(const std::string& deployment_id) { return deployment_id + "-apply"; }

Dispatcher::Dispatcher(store::Store& store, Launchers launchers,
                       const crypto::Ed25519Signer& signer, DispatcherOptions options)
    : store_(store),
      launchers_(std::move(launchers)),
      signer_(signer),
      options_(std::move(options)) {}

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
  auto backend = RenderBackend(runner->body.value("state_storage_configuration", json::object()),
                               {d.org_id, d.project_id, d.env_id}, options_.url, type != "local");
  if (!backend) return backend.error();

  std::string scope = StateKey(d);
  int64_t now = UnixSecondsNow();
  auto token =
      crypto::MintRunToken({d.run_id, std::string(crypto::kRunTokenAudience), now,
                            now + options_.token_lifetime.count(), crypto::RandomToken(16), scope},
                           signer_);
  if (!token) return token.error();
  std::string op = RunOp(d);
  launch::LaunchRequest request{.run_id = d.run_id, .op = op, .revision = "1", .token = *token};
  request.runner_args = {"--gateway=" + options_.url, "--run-id=" + d.run_id,
                         "--inputs-hash=" + InputsHash(RenderInputs(d)),
                         "--state-backend=" + backend->type};
  for (const std::string& entry : backend->config)
    request.runner_args.push_back("--backend-config=" + entry);
  if (!options_.providers.empty())
    request.runner_args.push_back("--providers=" + options_.providers);
  // A folder on the server (embedded berthd) is read in place; a bundle comes from the gateway.
  if (!path.empty()) request.runner_args.push_back("--module=" + path);
  // An approved plan may delete what its summary showed the approver; a destroy deletes.
  bool approved = d.run_id == ApplyRunId(d.id);
  if (approved) {
    request.runner_args.push_back("--approved-plan=" +
                                  d.result.value("plan", json::object()).value("hash", ""));
  }
  bool destroy = d.spec.value("op", "") == "destroy";
  if (destroy && op == "plan") request.runner_args.push_back("--plan-destroy");
  if (destroy || approved || d.spec.value("allow_destroy", false))
    request.runner_args.push_back("--allow-destroy");
  request.runner_configuration = runner->body.value("runner_configuration", json::object());
  return Launch{std::move(request), launcher->second};
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
      store_.Deployments().Transition(d.org_id, d.id, d.state, S::kFailed,
                                      "cannot take it up again: " + launch.error().message);
      continue;
    }
    {
      MutexLock lock(mutex_);
      runs_[d.run_id] = {d.org_id, launch->launcher};
    }
    if (d.state == S::kDispatched)
      store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning,
                                      "taken up again after a restart");
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
      runs_[d.run_id] = {d.org_id, launch->launcher};
    }
    launched = launch->launcher->Launch(launch->request);
  }
  if (!launched) {
    {
      MutexLock lock(mutex_);
      runs_.erase(d.run_id);
    }
    store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kFailed,
                                    launched.error().message);
    return false;
  }
  // Moved on by OnRunEnd already when the run was that quick.
  store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning, "runner started");
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
    auto now = std::chrono::steady_clock::now();
    if (now < next_deadline_check_) return;
    next_deadline_check_ = now + kDeadlineCheckEvery;
  }
  auto holding = store_.Deployments().Holding();
  if (!holding) return;
  int64_t cutoff = UnixMillisNow() - std::chrono::milliseconds(options_.run_deadline).count();
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval || d.updated_at > cutoff) continue;
    auto failed = store_.Deployments().Transition(
        d.org_id, d.id, d.state, S::kFailed,
        "deadline: run " + d.run_id + " had not ended " +
            std::to_string(options_.run_deadline.count()) + " s after it started");
    if (!failed) continue;
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
  if (d->state == S::kDispatched)
    store_.Deployments().Transition(org, d->id, S::kDispatched, S::kRunning, "runner started");
  if (outcome.succeeded && NeedsApproval(*d) && run_id != ApplyRunId(d->id)) {
    json plan = outcome.result ? outcome.result->value("plan", json::object()) : json::object();
    auto version = StateVersion(*d);
    store_.Deployments().Transition(org, d->id, S::kRunning, S::kWaitingApproval,
                                    "plan " + plan.value("hash", "") + " ready",
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
  store_.Deployments().Transition(org, d->id, S::kRunning, to, reason, {.result = result});
}

}  // namespace berth::server
