#include "server/agents/agent_launcher.h"

#include "crypto/jws.h"
#include "launch/launch_request_json.h"
#include "launch/run_outcome.h"

namespace berth::server {
namespace {

using launch::RunnerEnd;
using nlohmann::json;

// How long a launch of request waits for an agent: its runner's command_expiry.
std::chrono::milliseconds CommandExpiry(const launch::LaunchRequest& request) {
  const auto* agent = std::get_if<launch::AgentRunnerSettings>(&request.runner);
  return agent != nullptr ? agent->command_expiry : launch::AgentRunnerSettings{}.command_expiry;
}

}  // namespace

AgentLauncher::AgentLauncher(store::Store& store, launch::RunObserver& observer,
                             AgentLauncherOptions options)
    : store_(store),
      observer_(observer),
      options_(options),
      log_(options.log),
      clock_(options.clock ? *options.clock : SystemClock::Instance()) {}

AgentLauncher::~AgentLauncher() { Stop(); }

void AgentLauncher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    while (true) {
      uint64_t seen = options_.ends ? options_.ends->Generation() : 0;
      {
        MutexLock lock(mutex_);
        if (stopping_) return;
      }
      Tick();
      if (options_.ends) {
        options_.ends->WaitPast(seen, options_.tick);
      } else {
        std::this_thread::sleep_for(options_.tick);
      }
    }
  });
}

void AgentLauncher::Stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  if (options_.ends) options_.ends->Notify();
  if (thread_.joinable()) thread_.join();
}

Result<void> AgentLauncher::Enqueue(const launch::LaunchRequest& request) {
  // No secret waits in the queue: the gateway mints the run's token as it delivers the command,
  // with this scope and expiry.
  auto token = crypto::Jws::Parse(request.token);
  if (!token) return token.error();
  const json& claims = token->Claims();
  json payload = {
      {"request", launch::LaunchRequestToJson(request)},
      {"token", {{"scope", claims.value("scope", "")}, {"expires_at", claims.value("exp", 0)}}}};
  int64_t now = clock_.WallMillis();
  auto queued = store_.Agents().Enqueue({.org_id = request.org_id,
                                         .runner_id = request.runner_id,
                                         .kind = std::string(kCreateJob),
                                         .run_id = request.run_id,
                                         .payload = std::move(payload),
                                         .created_at = now,
                                         .expires_at = now + CommandExpiry(request).count()});
  if (!queued) return queued.error();
  if (options_.commands) options_.commands->Notify();
  // Said at once when nobody is there to take it, rather than left to its expiry.
  auto agents = store_.Agents().Agents(request.org_id, request.runner_id);
  if (agents &&
      (agents->empty() || now - agents->front().last_poll_at > store::kAgentConnectedWithinMs)) {
    observer_.OnRunEvent(request.run_id,
                         {.reason = "AgentNotConnected",
                          .message = "no agent of runner " + request.runner_id +
                                     " polled in the last minute: the run waits for one in the "
                                     "runner's queue until its command_expiry"});
  }
  return {};
}

Result<void> AgentLauncher::Launch(const launch::LaunchRequest& request) {
  {
    MutexLock lock(mutex_);
    runs_[request.run_id] = {request.org_id, request.runner_id, CommandExpiry(request)};
  }
  return Enqueue(request);
}

Result<void> AgentLauncher::Cancel(const std::string& run_id) {
  Run run;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return {};
    run = it->second;
  }
  auto dropped = store_.Agents().Drop(run.org, run.runner, std::string(kCreateJob), run_id,
                                      "cancelled before an agent took it");
  if (!dropped) return dropped.error();
  int64_t now = clock_.WallMillis();
  if (*dropped) {
    auto kept =
        store_.Agents().PutRunEnd({run.org, run.runner, run_id,
                                   launch::AgentReportOf(launch::RunnerStopped(
                                       RunnerEnd::kCancelled, "cancelled before an agent took it")),
                                   now});
    if (!kept) return kept.error();
    if (options_.ends) options_.ends->Notify();
    return {};
  }
  auto queued = store_.Agents().Enqueue({.org_id = run.org,
                                         .runner_id = run.runner,
                                         .kind = std::string(kCancelJob),
                                         .run_id = run_id,
                                         .created_at = now,
                                         .expires_at = now + run.command_expiry.count()});
  if (!queued) return queued.error();
  if (options_.commands) options_.commands->Notify();
  return {};
}

Result<void> AgentLauncher::Recover(const std::vector<launch::LaunchRequest>& adopt,
                                    const launch::RunIsHeld& held) {
  (void)held;
  for (const launch::LaunchRequest& request : adopt) {
    if (auto launched = Launch(request); !launched) return launched.error();
  }
  return {};
}

void AgentLauncher::Tick() {
  MutexLock tick(tick_mutex_);
  int64_t now = clock_.WallMillis();
  auto expired = store_.Agents().Expire(now);
  if (!expired && log_)
    log_->Warn("agent commands not expired", {{"why", expired.error().message}});
  for (const store::RunnerCommand& command :
       expired ? *expired : std::vector<store::RunnerCommand>{}) {
    if (command.kind != kCreateJob) continue;
    launch::RunnerExit end = launch::RunnerStopped(
        RunnerEnd::kAgentUnavailable,
        "no agent of runner " + command.runner_id +
            " took the launch before its command_expiry: is the agent running? (berth get "
            "runner " +
            command.runner_id + " shows its last poll)");
    IgnoreError(store_.Agents().PutRunEnd({command.org_id, command.runner_id, command.run_id,
                                           launch::AgentReportOf(end), now}),
                "an end kept already wins");
  }
  std::vector<std::string> tracked;
  {
    MutexLock lock(mutex_);
    for (const auto& [run_id, run] : runs_) tracked.push_back(run_id);
  }
  auto ends = store_.Agents().RunEnds(tracked);
  if (!ends) {
    if (log_) log_->Warn("agent run ends not read", {{"why", ends.error().message}});
    return;
  }
  for (const store::AgentRunEnd& end : *ends) {
    {
      MutexLock lock(mutex_);
      runs_.erase(end.run_id);
    }
    // The runner posted its result to berthd on its own: the dispatcher joins the two.
    observer_.OnRunEnd(end.run_id, launch::RunnerExitFromAgentReport(end.outcome));
    IgnoreError(store_.Agents().DeleteRunEnd(end.run_id), "recorded; a leftover row is harmless");
  }
}

}  // namespace berth::server
