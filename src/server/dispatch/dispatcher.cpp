#include "server/dispatch/dispatcher.h"

#include "core/time_format.h"
#include "crypto/random.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

json OutcomeJson(const launch::RunOutcome& outcome) {
  json out = {{"succeeded", outcome.succeeded}, {"exit_code", outcome.exit_code}};
  if (!outcome.error_kind.empty()) {
    out["error"] = {{"kind", outcome.error_kind}, {"message", outcome.message}};
  }
  if (outcome.result) out["run"] = *outcome.result;
  return out;
}

}  // namespace

Dispatcher::Dispatcher(store::Store& store, launch::Launcher& local,
                       const crypto::Ed25519Signer& signer, DispatcherOptions options)
    : store_(store), local_(local), signer_(signer), options_(std::move(options)) {}

Result<launch::LaunchRequest> Dispatcher::Prepare(const store::Deployment& d) {
  auto env = store_.Get(store::Kind::kEnvironment, d.org_id, d.project_id, d.env_id);
  if (!env) return env.error();
  std::optional<std::string> runner_id = env->columns["runner_id"];
  if (!runner_id || runner_id->empty())
    return MakeError(ErrorKind::kFailedPrecondition,
                     "environment " + d.project_id + "/" + d.env_id +
                         " has no runner: link one with refresh_runner");
  auto runner = store_.Get(store::Kind::kRunner, d.org_id, "", *runner_id);
  if (!runner) return runner.error();
  std::string type = runner->columns["runner_type"].value_or("");
  std::string storage = runner->columns["storage_type"].value_or("");
  if (type != "local" || storage != "berth")
    return MakeError(ErrorKind::kFailedPrecondition,
                     "runner " + *runner_id + " is " + type + " with " + storage +
                         " state; this berthd launches local runners with berth state so far");
  const json source = d.spec.value("source", json::object());
  std::string path = source.value("path", "");
  if (path.empty())
    return MakeError(ErrorKind::kInvalidArgument, "the deployment has no source path");

  std::string scope = d.org_id + "/" + d.project_id + "/" + d.env_id;
  int64_t now = UnixSecondsNow();
  auto token =
      crypto::MintRunToken({d.id, std::string(crypto::kRunTokenAudience), now,
                            now + options_.token_lifetime.count(), crypto::RandomToken(16), scope},
                           signer_);
  if (!token) return token.error();
  std::string op = d.spec.value("op", "plan");
  std::string state = options_.state_url + "/state/v1/" + scope;
  launch::LaunchRequest request{.run_id = d.id, .op = op, .revision = "1", .token = *token};
  request.runner_args = {
      "--module=" + path, "--state-backend=http", "--backend-config=address=" + state,
      "--backend-config=lock_address=" + state, "--backend-config=unlock_address=" + state};
  if (op == "destroy") request.runner_args.push_back("--allow-destroy");
  request.runner_configuration = runner->body.value("runner_configuration", json::object());
  return request;
}

Result<void> Dispatcher::Recover() {
  auto holding = store_.Deployments().Holding();
  if (!holding) return holding.error();
  std::vector<launch::LaunchRequest> known;
  for (const store::Deployment& d : *holding) {
    if (d.state == S::kWaitingApproval) continue;  // no run: it waits for a person
    auto request = Prepare(d);
    if (!request) {
      store_.Deployments().Transition(d.org_id, d.id, d.state, S::kFailed,
                                      "cannot take it up again: " + request.error().message);
      continue;
    }
    {
      MutexLock lock(mutex_);
      org_of_run_[d.id] = d.org_id;
    }
    if (d.state == S::kDispatched)
      store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning,
                                      "taken up again after a restart");
    known.push_back(std::move(*request));
  }
  return local_.Recover(known);
}

int Dispatcher::Tick() {
  auto startable = store_.Deployments().Startable(options_.batch);
  if (!startable) return 0;
  int started = 0;
  for (const store::Deployment& d : *startable) {
    // Another dispatcher may win this one: then it is theirs.
    auto claimed = store_.Deployments().Transition(d.org_id, d.id, S::kQueued, S::kDispatched, "",
                                                   {.run_id = d.id});
    if (!claimed) continue;
    // Known before the launch: a run may end before Launch returns.
    {
      MutexLock lock(mutex_);
      org_of_run_[d.id] = d.org_id;
    }
    auto request = Prepare(d);
    Result<void> launched = request ? local_.Launch(*request) : Result<void>(request.error());
    if (!launched) {
      {
        MutexLock lock(mutex_);
        org_of_run_.erase(d.id);
      }
      store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kFailed,
                                      launched.error().message);
      continue;
    }
    // Moved on by OnRunEnd already when the run was that quick.
    store_.Deployments().Transition(d.org_id, d.id, S::kDispatched, S::kRunning, "runner started");
    ++started;
  }
  return started;
}

Result<void> Dispatcher::Cancel(const std::string& org, const std::string& id) {
  auto d = store_.Deployments().Get(org, id);
  if (!d) return d.error();
  if (d->run_id.empty())
    return MakeError(ErrorKind::kFailedPrecondition, "deployment " + id + " has no run to stop");
  return local_.Cancel(d->run_id);
}

void Dispatcher::OnRunEnd(const std::string& run_id, const launch::RunOutcome& outcome) {
  std::string org;
  {
    MutexLock lock(mutex_);
    auto it = org_of_run_.find(run_id);
    if (it == org_of_run_.end()) return;
    org = it->second;
    org_of_run_.erase(it);
  }
  S to = outcome.succeeded                                ? S::kSucceeded
         : outcome.error_kind == launch::kRunnerCancelled ? S::kCancelled
                                                          : S::kFailed;
  std::string reason = outcome.succeeded ? "" : outcome.error_kind + ": " + outcome.message;
  // A deployment still dispatched (its launch raced its end) is moved on first.
  auto current = store_.Deployments().Get(org, run_id);
  if (current && current->state == S::kDispatched)
    store_.Deployments().Transition(org, run_id, S::kDispatched, S::kRunning, "runner started");
  store_.Deployments().Transition(org, run_id, S::kRunning, to, reason,
                                  {.result = OutcomeJson(outcome)});
}

}  // namespace berth::server
