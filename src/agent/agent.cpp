#include "agent/agent.h"

#include <set>

#include "core/clock.h"
#include "launch/launch_request_json.h"
#include "launch/run_outcome.h"

namespace berth::agent {
namespace {

using nlohmann::json;

// What retrying cannot fix: the command itself is wrong for this agent.
bool Permanent(const Error& error) {
  return error.kind == ErrorKind::kInvalidArgument ||
         error.kind == ErrorKind::kFailedPrecondition || error.kind == ErrorKind::kPermissionDenied;
}

std::chrono::milliseconds Longer(std::chrono::milliseconds delay) {
  return std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(30));
}

// Sleeps delay a tenth of a second at a time, so that stop ends it early.
void PauseUnlessStopped(std::chrono::milliseconds delay, const std::atomic<bool>& stop) {
  for (auto waited = std::chrono::milliseconds(0); waited < delay && !stop.load();
       waited += std::chrono::milliseconds(100))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

Agent::Agent(AgentClient& client, kube::KubeApi& kube, launch::KubernetesSettings settings,
             const std::string& runner, AgentOptions options)
    : client_(client),
      options_(std::move(options)),
      launcher_(kube, std::move(settings), SystemClock::Instance(), *this,
                launch::KubernetesLauncherOptions{.launcher_id = "berth-agent." + runner,
                                                  .kind = launch::WorkloadKind::kJob,
                                                  .tick = options_.launcher_tick}) {}

Agent::~Agent() {
  launcher_.Stop();
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  reported_.notify_all();
  if (reporter_.joinable()) reporter_.join();
}

Result<void> Agent::Start(const std::atomic<bool>& stop) {
  if (auto started = launcher_.Start(); !started) return started.error();
  auto live = client_.LiveRuns();
  for (auto delay = options_.retry; !live && !stop.load(); delay = Longer(delay)) {
    log_.Warn("berthd not reached", {{"why", live.error().ToString()}});
    PauseUnlessStopped(delay, stop);
    live = client_.LiveRuns();
  }
  if (!live) return live.error();
  std::set<std::string> waited_for;
  for (const auto& run : *live) waited_for.insert(run.run_id);
  if (auto recovered = launcher_.Recover(
          *live, [&](const std::string& run_id) { return waited_for.contains(run_id); });
      !recovered)
    return recovered.error();
  reporter_ = std::thread([this] { SendReports(); });
  return {};
}

void Agent::RunUntil(const std::atomic<bool>& stop) {
  std::chrono::milliseconds delay = options_.retry;
  while (!stop.load()) {
    auto command = client_.Next(options_.name, options_.version, options_.wait_seconds,
                                [&stop] { return stop.load(); });
    if (!command && stop.load()) return;
    if (!command) {
      log_.Warn("poll failed", {{"why", command.error().ToString()}});
      PauseUnlessStopped(delay, stop);
      delay = Longer(delay);
      continue;
    }
    delay = options_.retry;
    if (*command) Handle(**command);
  }
}

void Agent::Handle(const json& command) {
  const int64_t seq = command.value("seq", int64_t{0});
  const std::string receipt = command.value("receipt", "");
  const std::string kind = command.value("kind", "");
  if (kind == "create-job") return HandleCreate(command);
  if (kind == "cancel-job") {
    auto cancelled = launcher_.Cancel(command.value("run_id", ""));
    if (!cancelled && Permanent(cancelled.error())) {
      IgnoreError(client_.Settle(seq, "reject", receipt, cancelled.error().ToString()),
                  "the lease lapses and berthd delivers it again");
      return;
    }
    if (cancelled) IgnoreError(client_.Settle(seq, "ack", receipt), "delivered again: harmless");
    return;
  }
  IgnoreError(client_.Settle(
                  seq, "reject", receipt,
                  "this agent (" + options_.version + ") does not know commands of kind " + kind),
              "the lease lapses and berthd delivers it again");
}

void Agent::HandleCreate(const json& command) {
  const int64_t seq = command.value("seq", int64_t{0});
  const std::string receipt = command.value("receipt", "");
  json body = command.value("request", json::object());
  std::string token = body.value("token", "");
  body.erase("token");
  auto request = launch::LaunchRequestFromJson(body);
  if (!request || token.empty()) {
    IgnoreError(client_.Settle(seq, "reject", receipt,
                               request ? "the command carries no run token"
                                       : "the command is malformed: " + request.error().message),
                "the lease lapses and berthd delivers it again");
    return;
  }
  request->token = std::move(token);
  // The Job's name comes from the run: a command delivered again adopts the Job it made.
  auto launched = launcher_.Launch(*request);
  if (!launched) {
    log_.Error("run not launched",
               {{"run", request->run_id}, {"why", launched.error().ToString()}});
    // A passing fault (the API server away) is left to the lease: berthd delivers it again.
    if (Permanent(launched.error()))
      IgnoreError(client_.Settle(seq, "reject", receipt, launched.error().ToString()),
                  "the lease lapses and berthd delivers it again");
    return;
  }
  IgnoreError(client_.Settle(seq, "ack", receipt), "delivered again, it adopts the Job");
}

void Agent::OnRunEnd(const std::string& run_id, const launch::RunnerExit& exit) {
  {
    MutexLock lock(mutex_);
    reports_.push_back({run_id, std::nullopt, launch::AgentReportOf(exit)});
  }
  reported_.notify_all();
}

void Agent::OnRunEvent(const std::string& run_id, const launch::LaunchEvent& event) {
  {
    MutexLock lock(mutex_);
    reports_.push_back({run_id, event, json()});
  }
  reported_.notify_all();
}

void Agent::SendReports() {
  std::chrono::milliseconds delay = options_.retry;
  MutexLock lock(mutex_);
  while (true) {
    reported_.wait(mutex_, [&]() REQUIRES(mutex_) { return stopping_ || !reports_.empty(); });
    if (stopping_) return;
    Report report = reports_.front();
    mutex_.unlock();
    Result<void> sent = report.event ? client_.Event(report.run_id, *report.event)
                                     : client_.End(report.run_id, report.end);
    mutex_.lock();
    // A refusal (the run ended meanwhile, say) will not change: it is dropped, and said.
    if (sent || Permanent(sent.error()) || sent.error().kind == ErrorKind::kNotFound ||
        sent.error().kind == ErrorKind::kConflict) {
      if (!sent)
        log_.Warn("report refused", {{"run", report.run_id}, {"why", sent.error().ToString()}});
      reports_.pop_front();
      delay = options_.retry;
      continue;
    }
    reported_.wait_for(mutex_, delay, [&]() REQUIRES(mutex_) { return stopping_; });
    delay = Longer(delay);
  }
}

}  // namespace berth::agent
