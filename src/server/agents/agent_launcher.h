// The launcher of kubernetes-agent runners (docs/agents.md): a launch is a create-job command
// in the runner's durable queue (store/agent_store.h), a cancel a cancel-job one (or the
// create-job dropped if no agent took it yet), and a run's end is what its agent reported
// through the agent gateway, kept in the database until the berthd that owns the run records
// it, so any replica may take the agent's report. A launch no agent takes before the runner's
// command_expiry ends as AgentUnavailable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/mutex.h"
#include "launch/launcher.h"
#include "server/change_feed.h"
#include "store/store.h"
#include "sys/logger.h"

namespace berth::server {

inline constexpr std::string_view kCreateJob = "create-job";
inline constexpr std::string_view kCancelJob = "cancel-job";

struct AgentLauncherOptions {
  std::chrono::milliseconds tick{500};  // how often expiries and reported ends are looked for
  ChangeFeed* commands = nullptr;       // notified when a command is queued: long polls wake
  ChangeFeed* ends = nullptr;  // notified by the gateway when an end is reported: wakes this
  sys::Logger* log = nullptr;
  Clock* clock = nullptr;  // null: the system's
};

class AgentLauncher final : public launch::Launcher {
 public:
  AgentLauncher(store::Store& store, launch::RunObserver& observer, AgentLauncherOptions options);
  ~AgentLauncher() override;
  AgentLauncher(const AgentLauncher&) = delete;
  AgentLauncher& operator=(const AgentLauncher&) = delete;

  void Start();
  void Stop();

  Result<void> Launch(const launch::LaunchRequest& request) override;
  Result<void> Cancel(const std::string& run_id) override;
  // Adopted runs are tracked again and their create-job queued if it never was; the agent
  // finds the Jobs of runs nobody holds (it asks berthd which runs are live).
  Result<void> Recover(const std::vector<launch::LaunchRequest>& adopt,
                       const launch::RunIsHeld& held) override;
  bool SharedAcrossReplicas() const override { return true; }

  // Expires what no agent took and reports the ends kept for this berthd's runs. Start runs it
  // every options.tick and when options.ends moves.
  void Tick();

 private:
  struct Run {
    std::string org, runner;
    std::chrono::milliseconds command_expiry{0};  // its runner's, when it was launched
  };
  Result<void> Enqueue(const launch::LaunchRequest& request);

  store::Store& store_;
  launch::RunObserver& observer_;
  const AgentLauncherOptions options_;
  sys::Logger* log_;
  Clock& clock_;

  Mutex mutex_;
  std::map<std::string, Run> runs_ GUARDED_BY(mutex_);  // by run id
  bool stopping_ GUARDED_BY(mutex_) = false;
  Mutex tick_mutex_;  // one Tick at a time
  std::thread thread_;
};

}  // namespace berth::server
