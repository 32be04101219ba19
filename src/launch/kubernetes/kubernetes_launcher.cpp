#include "launch/kubernetes/kubernetes_launcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/duration.h"
#include "launch/run_outcome.h"

namespace berth::launch {
namespace {

using kube::kPods;
using kube::kSecrets;
using nlohmann::json;

// Waiting reasons that will not fix themselves (Kubernetes API reference, ContainerStateWaiting;
// kubelet's image manager).
std::optional<RunnerEnd> TerminalWaitingKind(const std::string& reason) {
  if (reason == "ImagePullBackOff" || reason == "ErrImagePull" || reason == "InvalidImageName" ||
      reason == "ErrImageNeverPull")
    return RunnerEnd::kImagePullFailed;
  if (reason == "CreateContainerConfigError" || reason == "CreateContainerError")
    return RunnerEnd::kConfigError;
  return std::nullopt;
}

const json* FindStatus(const json& statuses, std::string_view name) {
  if (!statuses.is_array()) return nullptr;
  for (const json& status : statuses) {
    if (status.value("name", "") == name) return &status;
  }
  return nullptr;
}

// The main container's end: its exit code, its termination message (the runner writes its
// result there) and the kubelet's reason, which names an out-of-memory kill.
RunnerExit FromTermination(const json& terminated) {
  auto text = [&](const char* key) {
    auto it = terminated.find(key);
    return it != terminated.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  RunnerExit exit{.message = text("reason"), .written_result = text("message")};
  auto code = terminated.find("exitCode");
  if (code != terminated.end() && code->is_number_integer()) exit.exit_code = code->get<int>();
  if (text("reason") == "OOMKilled") {
    exit.ended_as = RunnerEnd::kOomKilled;
    exit.message = "the runner ran out of memory (OOMKilled): raise its memory limit";
  }
  return exit;
}

// The Pod of a run: its own name for a Pod, the Job controller's for a Job's.
std::optional<json> FindRunPod(const kube::Informer& informer, const std::string& run_id) {
  for (json& pod : informer.List()) {
    if (pod["metadata"].value("labels", json::object()).value(std::string(kRunLabel), "") == run_id)
      return std::move(pod);
  }
  return std::nullopt;
}

bool Kept(const json& pod) {
  return pod["metadata"]
             .value("annotations", json::object())
             .value(std::string(kKeepAnnotation), "") == "true";
}

std::string RunIdOf(const json& pod) {
  return pod["metadata"].value("labels", json::object()).value(std::string(kRunLabel), "");
}

// The Pod runs and its runner has not ended: a kept one still waits for its apply.
bool RunnerRunning(const json& pod) {
  const json status = pod.value("status", json::object());
  const json containers = status.value("containerStatuses", json::array());
  const json* main = FindStatus(containers, kMainContainer);
  return status.value("phase", "") == "Running" && main != nullptr &&
         main->value("state", json::object()).contains("running");
}

// How long before a kept runner's wait ends it is handed no apply (the apply would find it
// gone): a minute, or a quarter of a shorter wait.
std::chrono::seconds KeptMargin(std::chrono::seconds wait) {
  return std::min(std::chrono::seconds(60), wait / 4);
}

}  // namespace

KubernetesLauncher::KubernetesLauncher(kube::KubeApi& api, KubernetesSettings settings,
                                       Clock& clock, RunObserver& observer,
                                       KubernetesLauncherOptions options)
    : api_(api),
      settings_(std::move(settings)),
      clock_(clock),
      observer_(observer),
      options_(std::move(options)) {}

KubernetesLauncher::~KubernetesLauncher() { Stop(); }

Result<void> KubernetesLauncher::Start() {
  {
    MutexLock lock(mutex_);
    last_reap_ = clock_.Now();
  }
  auto informer = InformerFor(settings_.ns);
  if (!informer) return informer.error();
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  return {};
}

void KubernetesLauncher::Stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::map<std::string, std::unique_ptr<kube::Informer>> informers;
  {
    MutexLock lock(mutex_);
    informers.swap(informers_);
  }
  for (auto& [ns, informer] : informers) informer->Stop();
}

void KubernetesLauncher::Loop() {
  MutexLock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(mutex_, options_.tick, [&]() REQUIRES(mutex_) { return stopping_; });
    if (stopping_) break;
    mutex_.unlock();
    Tick();
    mutex_.lock();
  }
}

std::vector<kube::InformerStats> KubernetesLauncher::WatchStats() const {
  MutexLock lock(mutex_);
  std::vector<kube::InformerStats> stats;
  stats.reserve(informers_.size());
  for (const auto& [ns, informer] : informers_) stats.push_back(informer->Stats());
  return stats;
}

Result<kube::Informer*> KubernetesLauncher::InformerFor(const std::string& ns) {
  {
    MutexLock lock(mutex_);
    if (auto it = informers_.find(ns); it != informers_.end()) return it->second.get();
  }
  // Built and synced outside the lock: its first list calls OnPod, which takes the lock.
  auto informer = std::make_unique<kube::Informer>(
      api_, kPods,
      kube::InformerOptions{
          .ns = ns,
          .label_selector = std::string(kLauncherLabel) + "=" + options_.launcher_id,
          .on_lost =
              [this, ns](const Error& why) {
                if (options_.api_notice) options_.api_notice(ns, false, why.ToString());
              },
          .on_regained =
              [this, ns] {
                if (options_.api_notice) options_.api_notice(ns, true, "");
              }});
  informer->AddHandler([this](const std::string& type, const json& pod) { OnPod(type, pod); });
  informer->Start();
  if (!informer->WaitForSync(std::chrono::seconds(60)))
    return MakeError(ErrorKind::kUnavailable,
                     "cannot list the runner Pods in namespace " + ns +
                         ": check the launcher's Role (pods: get, list, watch)");
  MutexLock lock(mutex_);
  auto [it, inserted] = informers_.try_emplace(ns, std::move(informer));
  return it->second.get();
}

Result<KubernetesLauncher::Run> KubernetesLauncher::Prepare(const LaunchRequest& request) const {
  const KubernetesRunnerSettings* runner = KubernetesSettingsOf(request.runner);
  if (runner == nullptr)
    return MakeError(ErrorKind::kInvalidArgument,
                     "runner " + request.runner_id + " is not a Kubernetes runner");
  const RunnerPodConfig* config = &runner->pod;
  // An apply continued in its plan run's kept Pod lives in that Pod: its names are the plan
  // run's.
  RunnerPodRequest pod_request{
      .run_id = request.continues_plan_runner ? request.plan_run_id : request.run_id,
      .revision = request.revision,
      .invocation = request.invocation,
      .labels = request.labels,
      .kind = options_.kind,
      .launcher = options_.launcher_id};
  const bool keep = request.approval_follows && config->keep_for_approval.count() > 0;
  if (keep) pod_request.invocation.await_apply_seconds = config->keep_for_approval.count();
  auto manifests = BuildRunnerManifests(settings_, *config, pod_request);
  if (!manifests) return manifests.error();
  if (!config->always_cleanup)
    manifests->workload["metadata"]["annotations"][std::string(kKeepAnnotation)] = "true";
  Run run;
  run.request = request;
  run.config = *config;
  run.manifests = std::move(*manifests);
  run.launched_at = clock_.Now();
  run.kept_after_result = keep;
  run.continued = request.continues_plan_runner;
  return run;
}

Result<void> KubernetesLauncher::Create(Run& run) {
  const RunnerManifests& m = run.manifests;
  const kube::ResourceKind& kind = options_.kind == WorkloadKind::kPod ? kPods : kube::kJobs;
  auto created = api_.Create(kind, m.ns, m.workload);
  if (!created && created.error().kind == ErrorKind::kAlreadyExists) {
    created = api_.Get(kind, m.ns, m.name);  // a create that happened before: adopt it
  }
  if (!created) return created.error();
  run.uid = (*created)["metadata"].value("uid", "");
  run.created = true;
  // The token's Secret is owned by the workload so that it goes with it.
  json secret = m.secret;
  secret["metadata"]["ownerReferences"] = {{{"apiVersion", std::string((*created)["apiVersion"])},
                                            {"kind", std::string((*created)["kind"])},
                                            {"name", m.name},
                                            {"uid", run.uid}}};
  secret["stringData"] = {{"token", run.request.token}};
  auto stored = api_.Create(kSecrets, m.ns, secret);
  if (!stored && stored.error().kind != ErrorKind::kAlreadyExists) return stored.error();
  return {};
}

Result<void> KubernetesLauncher::Launch(const LaunchRequest& request) {
  {
    MutexLock lock(mutex_);
    if (runs_.contains(request.run_id)) return {};  // launched already
  }
  auto run = Prepare(request);
  if (!run) return run.error();
  auto informer = InformerFor(run->manifests.ns);
  if (!informer) return informer.error();
  if (run->continued) {
    Track(std::move(*run), **informer,
          "the plan's kept runner Pod ended before the apply was handed to it; deploy again");
    return {};
  }
  for (const LaunchEvent& event : run->manifests.warnings)
    observer_.OnRunEvent(request.run_id, event);
  auto created = Create(*run);
  if (!created && created.error().reason == kube::kReasonQuotaExceeded) {
    run->waiting_for = RunnerEnd::kQuotaExhausted;
    run->quota_backoff = options_.quota_retry_initial;
    run->next_create = clock_.Now() + run->quota_backoff;
    observer_.OnRunEvent(request.run_id, {std::string(RunnerEndName(RunnerEnd::kQuotaExhausted)),
                                          created.error().message + "; retrying with backoff"});
  } else if (!created) {
    return created.error();
  }
  Track(std::move(*run), **informer, nullptr);
  return {};
}

void KubernetesLauncher::Track(Run&& run, kube::Informer& informer, const char* when_gone) {
  const std::string run_id = run.request.run_id;
  const std::string label = run.continued ? run.request.plan_run_id : run_id;
  std::vector<Ending> endings;
  {
    MutexLock lock(mutex_);
    auto [it, inserted] = runs_.try_emplace(run_id, std::move(run));
    Run& tracked = it->second;
    if (inserted && tracked.continued) {
      kept_.erase(label);
      continued_[label] = run_id;
      tracked.started = true;
    }
    // Events of the Pod before it was tracked were passed over: judge where it stands now (an
    // adopted Pod may have finished already).
    std::optional<json> pod = inserted ? FindRunPod(informer, label) : std::nullopt;
    if (pod) {
      tracked.created = true;
      if (auto exit = Judge(tracked, "MODIFIED", *pod)) End(tracked, std::move(*exit), endings);
    } else if (inserted && when_gone != nullptr) {
      End(tracked, RunnerStopped(RunnerEnd::kLost, when_gone), endings);
    }
  }
  Report(endings);
}

Result<void> KubernetesLauncher::Cancel(const std::string& run_id) {
  std::vector<Ending> endings;
  Cleanup cleanup;
  {
    MutexLock lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second.ended) return {};
    Run& run = it->second;
    run.cancelling = true;
    if (!run.created) {
      End(run, RunnerStopped(RunnerEnd::kCancelled, "cancelled before its runner was created"),
          endings);
    } else {
      cleanup = {run.manifests.ns, run.manifests.name, "", !run.started};
    }
  }
  Report(endings);
  if (cleanup.workload.empty()) return {};
  // A started runner gets its termination grace period: the runner stops TF cleanly on SIGTERM
  // and writes its result; the Pod's end then reports the run.
  kube::DeleteOptions options;
  if (cleanup.force) options.grace_period_seconds = 0;
  options.propagation_policy = "Background";
  const auto& kind = options_.kind == WorkloadKind::kPod ? kPods : kube::kJobs;
  auto deleted = api_.Delete(kind, cleanup.ns, cleanup.workload, options);
  if (!deleted && deleted.error().kind != ErrorKind::kNotFound) return deleted.error();
  return {};
}

void KubernetesLauncher::OnPod(const std::string& type, const json& pod) {
  const json labels = pod["metadata"].value("labels", json::object());
  std::string run_id = labels.value(std::string(kRunLabel), "");
  std::vector<Ending> endings;
  {
    MutexLock lock(mutex_);
    if (auto continued = continued_.find(run_id); continued != continued_.end())
      run_id = continued->second;
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second.ended) return;
    Run& run = it->second;
    if (auto exit = Judge(run, type, pod)) End(run, std::move(*exit), endings);
  }
  Report(endings);
}

std::optional<RunnerExit> KubernetesLauncher::Judge(Run& run, const std::string& type,
                                                    const json& pod) {
  const json status = pod.value("status", json::object());
  const json containers = status.value("containerStatuses", json::array());
  const json* main = FindStatus(containers, kMainContainer);
  std::string phase = status.value("phase", "");
  std::string reason = status.value("reason", "");
  // The kubelet kills the containers of an evicted Pod: the Pod's reason is the cause.
  if (phase == "Failed" && reason == "Evicted")
    return RunnerStopped(RunnerEnd::kEvicted,
                         "the runner Pod was evicted: " + status.value("message", ""));
  if (phase == "Failed" && reason == "DeadlineExceeded")
    return RunnerStopped(RunnerEnd::kDeadlineExceeded,
                         "the runner Pod ran past its deadline: " + status.value("message", ""));
  if (main != nullptr) {
    const json state = main->value("state", json::object());
    if (state.contains("running") || state.contains("terminated")) run.started = true;
    if (state.contains("terminated")) {
      RunnerExit exit = FromTermination(state["terminated"]);
      exit.image_id = main->value("imageID", "");
      exit.stop_requested = run.cancelling;
      // Its termination message is then the plan's result, which the run-end join refuses
      // for the apply: this says why.
      if (run.continued && !exit.ended_as)
        exit.message =
            "the plan's kept runner ended without taking up the apply (its wait ran out, or it "
            "was stopped); deploy again";
      return exit;
    }
  }
  if (type == "DELETED") {
    if (run.cancelling) return RunnerStopped(RunnerEnd::kCancelled, "cancelled");
    return RunnerStopped(RunnerEnd::kLost,
                         run.started ? "the runner Pod vanished while it ran (its node was lost "
                                       "or it was deleted); the run's outcome is unknown"
                                     : "the runner Pod was deleted before it started");
  }
  if (phase == "Failed") {
    std::string message = status.value("message", "");
    for (const json& init : status.value("initContainerStatuses", json::array())) {
      const json terminated = init["state"].value("terminated", json::object());
      if (terminated.value("exitCode", 0) != 0)
        return RunnerStopped(
            RunnerEnd::kFailed,
            fmt::format("init container {} exited {}: {}", init.value("name", ""),
                        terminated.value("exitCode", 0), terminated.value("message", "")));
    }
    return RunnerStopped(RunnerEnd::kFailed, "the runner Pod failed: " + reason + " " + message);
  }
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    for (const json& container : status.value(list, json::array())) {
      const json waiting = container["state"].value("waiting", json::object());
      if (auto kind = TerminalWaitingKind(waiting.value("reason", ""))) {
        return RunnerStopped(
            *kind, fmt::format("container {} cannot start: {}: {}", container.value("name", ""),
                               waiting.value("reason", ""), waiting.value("message", "")));
      }
    }
  }
  for (const json& condition : status.value("conditions", json::array())) {
    if (condition.value("type", "") == "PodScheduled" && condition.value("status", "") == "False" &&
        condition.value("reason", "") == "Unschedulable" &&
        run.waiting_for != RunnerEnd::kUnschedulable) {
      run.waiting_for = RunnerEnd::kUnschedulable;
      Tell(run.request.run_id, {std::string(RunnerEndName(RunnerEnd::kUnschedulable)),
                                condition.value("message", "no node fits")});
    }
  }
  return std::nullopt;
}

void KubernetesLauncher::End(Run& run, RunnerExit exit, std::vector<Ending>& endings) {
  run.ended = true;
  if (run.continued) continued_.erase(run.request.plan_run_id);
  bool keep = !run.config.always_cleanup && run.started;
  if (run.created && !keep) {
    cleanups_.push_back(
        {run.manifests.ns, run.manifests.name, run.manifests.secret_name, !run.started});
  } else if (run.created) {
    cleanups_.push_back({run.manifests.ns, "", run.manifests.secret_name, false});
  }
  endings.push_back({run.request.run_id, std::move(exit)});
  wake_.notify_all();
}

void KubernetesLauncher::Report(const std::vector<Ending>& endings) {
  for (const auto& ending : endings) {
    observer_.OnRunEnd(ending.run_id, ending.exit);
    MutexLock lock(mutex_);
    runs_.erase(ending.run_id);
  }
  std::vector<std::pair<std::string, LaunchEvent>> told;
  {
    MutexLock lock(mutex_);
    told.swap(told_);
  }
  for (const auto& [run_id, event] : told) observer_.OnRunEvent(run_id, event);
}

void KubernetesLauncher::Tell(const std::string& run_id, LaunchEvent event) {
  told_.emplace_back(run_id, std::move(event));
}

void KubernetesLauncher::Tick() {
  MutexLock ticking(tick_mutex_);
  auto now = clock_.Now();
  std::vector<Ending> endings;
  std::vector<std::string> retry;
  {
    MutexLock lock(mutex_);
    for (auto& [run_id, run] : runs_) {
      if (run.ended || run.started) continue;
      if (now - run.launched_at >= settings_.startup_grace_period) {
        End(run,
            RunnerStopped(
                run.waiting_for.value_or(RunnerEnd::kConnectionFailed),
                fmt::format(
                    "the runner Pod was not running within {} "
                    "(KUBERNETES_STARTUP_GRACE_PERIOD){}",
                    FormatDuration(settings_.startup_grace_period),
                    run.waiting_for ? fmt::format(": {}", RunnerEndName(*run.waiting_for)) : "")),
            endings);
      } else if (run.next_create && now >= *run.next_create) {
        retry.push_back(run_id);
      }
      if (!run.ended && !run.told_pending && now - run.launched_at >= options_.pending_notice) {
        run.told_pending = true;
        Tell(run_id, {std::string(kRunnerPending),
                      fmt::format("the runner Pod is not running {} after its launch ({}); it "
                                  "is given KUBERNETES_STARTUP_GRACE_PERIOD={}",
                                  FormatDuration(options_.pending_notice),
                                  run.waiting_for ? RunnerEndName(*run.waiting_for)
                                                  : "waiting for a node to start it",
                                  FormatDuration(settings_.startup_grace_period))});
      }
    }
  }
  Report(endings);
  for (const std::string& run_id : retry) {
    Run attempt;
    {
      MutexLock lock(mutex_);
      auto it = runs_.find(run_id);
      if (it == runs_.end() || it->second.ended) continue;
      attempt = it->second;
    }
    auto created = Create(attempt);
    MutexLock lock(mutex_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) continue;
    Run& run = it->second;
    if (created) {
      run.created = true;
      run.uid = attempt.uid;
      run.next_create.reset();
      run.waiting_for.reset();
    } else {
      run.quota_backoff = std::min(run.quota_backoff * 2, options_.quota_retry_max);
      run.next_create = now + run.quota_backoff;
    }
  }
  DoCleanups();
  bool reap = false;
  {
    MutexLock lock(mutex_);
    // Past its wait a kept runner ends by itself; the reaper removes its Pod.
    std::erase_if(kept_, [now](const auto& kept) { return now >= kept.second.until; });
    if (now - last_reap_ >= settings_.reap_interval) {
      last_reap_ = now;
      reap = true;
    }
  }
  if (reap) Reap();
}

void KubernetesLauncher::DoCleanups() {
  std::vector<Cleanup> cleanups;
  {
    MutexLock lock(mutex_);
    cleanups.swap(cleanups_);
  }
  std::vector<Cleanup> failed;
  const auto& kind = options_.kind == WorkloadKind::kPod ? kPods : kube::kJobs;
  for (const Cleanup& c : cleanups) {
    bool ok = true;
    if (!c.workload.empty()) {
      kube::DeleteOptions options{.propagation_policy = "Background"};
      if (c.force) options.grace_period_seconds = 0;
      auto deleted = api_.Delete(kind, c.ns, c.workload, options);
      ok = deleted || deleted.error().kind == ErrorKind::kNotFound;
    }
    if (!c.secret.empty()) {
      auto deleted = api_.Delete(kSecrets, c.ns, c.secret, {});
      ok = ok && (deleted || deleted.error().kind == ErrorKind::kNotFound);
    }
    if (!ok) failed.push_back(c);  // the API is away: next tick
  }
  MutexLock lock(mutex_);
  cleanups_.insert(cleanups_.end(), failed.begin(), failed.end());
}

void KubernetesLauncher::Reap() {
  std::vector<Cleanup> reaped;
  {
    MutexLock lock(mutex_);
    for (const auto& [ns, informer] : informers_) {
      for (const json& pod : informer->List()) {
        std::string run_id = RunIdOf(pod);
        if (runs_.contains(run_id) || continued_.contains(run_id) || Kept(pod)) continue;
        std::string phase = pod.value("status", json::object()).value("phase", "");
        if (phase != "Succeeded" && phase != "Failed") continue;
        reaped.push_back({ns, WorkloadName(run_id), TokenSecretName(run_id), false});
      }
    }
    cleanups_.insert(cleanups_.end(), reaped.begin(), reaped.end());
  }
  DoCleanups();
}

std::optional<std::string> KubernetesLauncher::BerthdUrlForRunners(const RunnerSettings&) const {
  if (settings_.container_backend_url.empty()) return std::nullopt;
  return settings_.container_backend_url;
}

Result<void> KubernetesLauncher::Recover(const std::vector<LaunchRequest>& adopt,
                                         const RunIsHeld& held) {
  std::map<std::string, Run> adopted;  // by the run id their Pod is labelled with
  std::set<std::string> namespaces = {settings_.ns};
  for (const LaunchRequest& request : adopt) {
    auto run = Prepare(request);
    if (!run) return run.error();
    namespaces.insert(run->manifests.ns);
    adopted.emplace(run->continued ? request.plan_run_id : request.run_id, std::move(*run));
  }
  std::map<std::string, kube::Informer*> informers;
  std::vector<Cleanup> orphans;
  for (const std::string& ns : namespaces) {
    auto informer = InformerFor(ns);
    if (!informer) return informer.error();
    informers[ns] = *informer;
    for (const json& pod : (*informer)->List()) {
      std::string run_id = RunIdOf(pod);
      if (!adopted.contains(run_id) && !Kept(pod) && !held(run_id))
        orphans.push_back({ns, WorkloadName(run_id), TokenSecretName(run_id), false});
    }
  }
  // The Secret of a Pod deleted here goes with it; one whose Pod went while berth was down
  // went with it too, by its owner reference.
  {
    MutexLock lock(mutex_);
    cleanups_.insert(cleanups_.end(), orphans.begin(), orphans.end());
  }
  for (auto& [label, run] : adopted) {
    kube::Informer& informer = *informers.at(run.manifests.ns);
    // Never started again: the runner may have applied already.
    Track(std::move(run), informer,
          "the runner Pod is gone (deleted while berth was down); the run's outcome is unknown");
  }
  DoCleanups();
  return {};
}

bool KubernetesLauncher::KeptAfterResult(const std::string& run_id) const {
  MutexLock lock(mutex_);
  auto it = runs_.find(run_id);
  return it != runs_.end() && it->second.kept_after_result;
}

void KubernetesLauncher::Release(const std::string& run_id) {
  MutexLock lock(mutex_);
  auto it = runs_.find(run_id);
  if (it == runs_.end() || it->second.ended) return;
  const Run& run = it->second;
  // Its token Secret stays with its Pod, which owns it; both go when the runner ends.
  const std::chrono::seconds wait = run.config.keep_for_approval;
  kept_[run_id] = {run.manifests.ns, clock_.Now() + wait - KeptMargin(wait)};
  runs_.erase(it);
}

bool KubernetesLauncher::ContinuesIn(const std::string& plan_run_id) const {
  MutexLock lock(mutex_);
  auto kept = kept_.find(plan_run_id);
  if (kept == kept_.end() || clock_.Now() >= kept->second.until) return false;
  auto informer = informers_.find(kept->second.ns);
  if (informer == informers_.end()) return false;
  std::optional<json> pod = FindRunPod(*informer->second, plan_run_id);
  return pod && RunnerRunning(*pod);
}

}  // namespace berth::launch
