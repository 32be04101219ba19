// The Kubernetes launcher: one Pod (or Job) per run in the runner's namespace, its token in a
// per-run Secret, the outcome read from Pod status through one shared watch per namespace (no
// polling), Pods that never start force-deleted after the startup grace period, quota
// refusals retried, finished Pods reaped, and a restart that adopts what it still tracks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "kube/informer.h"
#include "kube/kube_api.h"
#include "launch/kubernetes/pod_builder.h"
#include "launch/launcher.h"

namespace berth::launch {

struct KubernetesLauncherOptions {
  std::string launcher_id = "berth";  // berth.dev/launcher: this launcher's Pods
  WorkloadKind kind = WorkloadKind::kPod;
  std::chrono::milliseconds tick{500};  // how often the timers run on the launcher's thread
  std::chrono::seconds quota_retry_initial{5};
  std::chrono::seconds quota_retry_max{60};
  // A run whose Pod is not running this long after its launch is a RunnerPending event, once.
  std::chrono::seconds pending_notice{30};
  // Told when the apiserver stops answering the watch of a namespace's runner Pods (reachable
  // false, with why) and when it answers again; runs go on meanwhile.
  std::function<void(const std::string& ns, bool reachable, const std::string& why)> api_notice;
};

inline constexpr std::string_view kRunnerPending = "RunnerPending";

// Annotation of a Pod kept after its run (alwaysCleanup: false): the reaper leaves it.
inline constexpr std::string_view kKeepAnnotation = "berth.dev/keep";

class KubernetesLauncher final : public Launcher {
 public:
  KubernetesLauncher(kube::KubeApi& api, KubernetesSettings settings, Clock& clock,
                     RunObserver& observer, KubernetesLauncherOptions options = {});
  ~KubernetesLauncher() override;
  KubernetesLauncher(const KubernetesLauncher&) = delete;
  KubernetesLauncher& operator=(const KubernetesLauncher&) = delete;

  // Watches the launcher's namespace (synced before it returns) and starts the timers.
  Result<void> Start();
  void Stop();

  Result<void> Launch(const LaunchRequest& request) override;
  Result<void> Cancel(const std::string& run_id) override;
  Result<void> Recover(const std::vector<LaunchRequest>& adopt, const RunIsHeld& held) override;
  bool SharedAcrossReplicas() const override { return true; }
  // A plan run of a runner with job.keep_for_approval: its Pod waits for the apply.
  bool KeptAfterResult(const std::string& run_id) const override EXCLUDES(mutex_);
  void Release(const std::string& run_id) override EXCLUDES(mutex_);
  // The plan run's Pod is released, running, and not about to end its wait.
  bool ContinuesIn(const std::string& plan_run_id) const override EXCLUDES(mutex_);
  // KUBERNETES_CONTAINER_BACKEND_URL, when it is set.
  std::optional<std::string> BerthdUrlForRunners(const RunnerSettings& runner) const override;

  // The timers, once: startup deadlines, quota retries, cleanups, reaping. Start runs it every
  // options.tick; a test with a ManualClock calls it after moving the clock.
  void Tick();

  // The watches this launcher holds (one per namespace it launches into).
  std::vector<kube::InformerStats> WatchStats() const;

 private:
  struct Run {
    LaunchRequest request;
    RunnerPodConfig config;
    RunnerManifests manifests;
    std::chrono::steady_clock::time_point launched_at;
    std::optional<std::chrono::steady_clock::time_point> next_create;  // a quota retry
    std::chrono::seconds quota_backoff{0};
    std::string uid;  // of the Pod or Job once created
    bool created = false;
    bool started = false;  // the main container ran: never force-deleted from then on
    bool cancelling = false;
    bool ended = false;
    bool kept_after_result = false;        // its runner waits for the apply after its result
    bool continued = false;                // an apply run in its plan run's kept Pod
    std::optional<RunnerEnd> waiting_for;  // why it has not started: unschedulable, quota
    bool told_pending = false;             // the user was told it has not started yet
  };
  // A plan run's Pod after its run ended by its result: its runner waits for the apply.
  struct KeptRunner {
    std::string ns;
    std::chrono::steady_clock::time_point until;  // handed no apply from then on
  };
  struct Cleanup {
    std::string ns, workload, secret;
    bool force = false;
  };
  struct Ending {
    std::string run_id;
    RunnerExit exit;
  };

  Result<Run> Prepare(const LaunchRequest& request) const;
  // Tracks run on its Pod (for an apply continued in a kept Pod, the plan run's) and judges
  // where that Pod stands (an adopted one may have finished already).
  // Its Pod not being there yet is what when_gone says, as RunnerLost; null: it may not have
  // been seen yet (just created).
  void Track(Run&& run, kube::Informer& informer, const char* when_gone) EXCLUDES(mutex_);
  // Creates the workload and its Secret; kResourceExhausted when a quota is full.
  Result<void> Create(Run& run);
  Result<kube::Informer*> InformerFor(const std::string& ns) EXCLUDES(mutex_);
  void OnPod(const std::string& type, const nlohmann::json& pod) EXCLUDES(mutex_);
  // What a Pod's state means for its run: an outcome when it has ended.
  std::optional<RunnerExit> Judge(Run& run, const std::string& type, const nlohmann::json& pod)
      REQUIRES(mutex_);
  void End(Run& run, RunnerExit exit, std::vector<Ending>& endings) REQUIRES(mutex_);
  // Reports the runs that ended, then the events said meanwhile (outside the lock: the
  // callbacks reach the store).
  void Report(const std::vector<Ending>& endings) EXCLUDES(mutex_);
  void Tell(const std::string& run_id, LaunchEvent event) REQUIRES(mutex_);
  void DoCleanups() EXCLUDES(mutex_);
  void Reap() EXCLUDES(mutex_);
  void Loop();

  kube::KubeApi& api_;
  const KubernetesSettings settings_;
  Clock& clock_;
  RunObserver& observer_;
  const KubernetesLauncherOptions options_;

  mutable Mutex mutex_;
  std::map<std::string, Run> runs_ GUARDED_BY(mutex_);
  std::map<std::string, KeptRunner> kept_ GUARDED_BY(mutex_);  // by plan run id
  // The apply run in each plan run's kept Pod, by the plan run id the Pod is labelled with.
  std::map<std::string, std::string> continued_ GUARDED_BY(mutex_);
  std::vector<Cleanup> cleanups_ GUARDED_BY(mutex_);
  std::map<std::string, std::unique_ptr<kube::Informer>> informers_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point last_reap_ GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, LaunchEvent>> told_ GUARDED_BY(mutex_);  // to report

  Mutex tick_mutex_;  // one Tick at a time
  std::condition_variable_any wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace berth::launch
