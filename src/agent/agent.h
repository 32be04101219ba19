// berth-agent (docs/agents.md): runs in the cluster of a kubernetes-agent runner, makes only
// outbound requests to berthd, and launches each run berthd queues for its runner as a Job in
// its namespace with the Kubernetes launcher (the same Pod builder, the run's token in a per-run
// Secret, names derived from the run so that a command delivered twice starts one Job). What
// the launcher sees (events, ends) goes back to berthd, retried until berthd takes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "agent/agent_client.h"
#include "core/mutex.h"
#include "kube/kube_api.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "sys/logger.h"

namespace berth::agent {

struct AgentOptions {
  std::string name;  // this agent (its Pod's name): berthd shows who polls
  std::string version;
  int wait_seconds = 25;                  // how long berthd holds a poll
  std::chrono::milliseconds retry{1000};  // after a failed poll or report, growing to 30 s
  std::chrono::milliseconds launcher_tick{500};
};

class Agent final : public launch::RunObserver {
 public:
  Agent(AgentClient& client, kube::KubeApi& kube, launch::KubernetesSettings settings,
        const std::string& runner, AgentOptions options);
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Watches its namespace, adopts the Jobs of the runs berthd still waits for (a restarted agent
  // launches nothing twice) and removes those of runs nobody waits for. Until berthd answers
  // (it may be down, or a proxy may turn the agent away) it asks again, saying why, until stop.
  Result<void> Start(const std::atomic<bool>& stop);
  // Polls and handles commands until stop.
  void RunUntil(const std::atomic<bool>& stop);

  void OnRunEnd(const std::string& run_id, const launch::RunnerExit& exit) override;
  void OnRunEvent(const std::string& run_id, const launch::LaunchEvent& event) override;

 private:
  struct Report {
    std::string run_id;
    std::optional<launch::LaunchEvent> event;  // else an end
    nlohmann::json end;
  };
  void Handle(const nlohmann::json& command);
  void HandleCreate(const nlohmann::json& command);
  void SendReports();

  AgentClient& client_;
  const AgentOptions options_;
  sys::Logger log_;  // on stderr, as every berth program logs
  launch::KubernetesLauncher launcher_;

  Mutex mutex_;
  std::condition_variable_any reported_;
  std::deque<Report> reports_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread reporter_;
};

}  // namespace berth::agent
