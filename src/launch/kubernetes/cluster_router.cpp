#include "launch/kubernetes/cluster_router.h"

namespace berth::launch {
namespace {

// The cluster a runner names; nullopt for berthd's own (and for a runner of another launcher).
const std::optional<ClusterTarget>& TargetOf(const RunnerSettings& runner) {
  static const std::optional<ClusterTarget> kHome;
  const KubernetesRunnerSettings* kubernetes = KubernetesSettingsOf(runner);
  return kubernetes != nullptr ? kubernetes->cluster : kHome;
}

}  // namespace

ClusterRouter::ClusterRouter(Launcher& home, Options options)
    : home_(home), options_(std::move(options)) {}

// The clusters' launchers stop before their clients go.
ClusterRouter::~ClusterRouter() {
  MutexLock lock(mutex_);
  for (auto& [key, cluster] : clusters_) cluster.launcher.reset();
}

Result<Launcher*> ClusterRouter::LauncherFor(const LaunchRequest& request) {
  const std::optional<ClusterTarget>& target = TargetOf(request.runner);
  if (!target) return &home_;
  const std::string key = target->Key(request.org_id, request.runner_id);
  {
    MutexLock lock(mutex_);
    if (auto it = clusters_.find(key); it != clusters_.end()) return it->second.launcher.get();
  }
  MutexLock making(making_);
  {
    MutexLock lock(mutex_);  // made by another launch while this one waited
    if (auto it = clusters_.find(key); it != clusters_.end()) return it->second.launcher.get();
  }
  const std::string name = target->Name();
  auto config = ConfigFor(*target, request.org_id, request.runner_id, options_.means);
  if (!config) return config.error();
  Cluster cluster{.name = name, .client = kube::MakeKubeClient(std::move(*config))};
  // One request first: a credential the cluster refuses is said at once, in its words.
  const std::string& ns = KubernetesSettingsOf(request.runner)->pod.ns;
  auto probe =
      cluster.client->List(kube::kPods, ns, {.field_selector = "metadata.name=berth-probe"});
  auto launcher = probe ? options_.make(*cluster.client, name, ns)
                        : Result<std::unique_ptr<Launcher>>(probe.error());
  if (!launcher) {
    Error error = launcher.error();
    error.message = "cluster " + name + " cannot be reached: " + error.message;
    return error;
  }
  cluster.launcher = std::move(*launcher);
  Launcher* made = cluster.launcher.get();
  MutexLock lock(mutex_);
  clusters_.emplace(key, std::move(cluster));
  return made;
}

std::vector<Launcher*> ClusterRouter::All() const {
  std::vector<Launcher*> all = {&home_};
  MutexLock lock(mutex_);
  all.reserve(1 + clusters_.size());
  for (const auto& [key, cluster] : clusters_) all.push_back(cluster.launcher.get());
  return all;
}

Result<void> ClusterRouter::Launch(const LaunchRequest& request) {
  auto launcher = LauncherFor(request);
  if (!launcher) return launcher.error();
  return (*launcher)->Launch(request);
}

Result<void> ClusterRouter::Cancel(const std::string& run_id) {
  Result<void> cancelled;
  for (Launcher* launcher : All()) {
    if (auto done = launcher->Cancel(run_id); !done && cancelled) cancelled = done.error();
  }
  return cancelled;
}

Result<void> ClusterRouter::Recover(const std::vector<LaunchRequest>& adopt,
                                    const RunIsHeld& held) {
  std::map<Launcher*, std::vector<LaunchRequest>> by_launcher = {{&home_, {}}};
  for (const LaunchRequest& request : adopt) {
    auto launcher = LauncherFor(request);
    if (launcher) {
      by_launcher[*launcher].push_back(request);
    } else if (options_.observer != nullptr) {
      options_.observer->OnRunEnd(
          request.run_id, RunnerStopped(RunnerEnd::kLost, "after berthd's restart its runner's " +
                                                              launcher.error().message));
    }
  }
  for (auto& [launcher, requests] : by_launcher) {
    if (auto recovered = launcher->Recover(requests, held); !recovered) return recovered.error();
  }
  return {};
}

bool ClusterRouter::KeptAfterResult(const std::string& run_id) const {
  for (Launcher* launcher : All()) {
    if (launcher->KeptAfterResult(run_id)) return true;
  }
  return false;
}

void ClusterRouter::Release(const std::string& run_id) {
  for (Launcher* launcher : All()) launcher->Release(run_id);
}

bool ClusterRouter::ContinuesIn(const std::string& plan_run_id) const {
  for (Launcher* launcher : All()) {
    if (launcher->ContinuesIn(plan_run_id)) return true;
  }
  return false;
}

std::optional<std::string> ClusterRouter::BerthdUrlForRunners(const RunnerSettings& runner) const {
  if (TargetOf(runner) && !options_.berthd_url_elsewhere.empty())
    return options_.berthd_url_elsewhere;
  return home_.BerthdUrlForRunners(runner);
}

Result<ClusterCheck> ClusterRouter::Check(const LaunchRequest& request) const {
  const KubernetesRunnerSettings* runner = KubernetesSettingsOf(request.runner);
  if (runner == nullptr)
    return MakeError(ErrorKind::kInvalidArgument,
                     "runner " + request.runner_id + " is not a Kubernetes runner");
  const std::optional<ClusterTarget>& target = runner->cluster;
  ClusterCheck check{.ns = runner->pod.ns};
  if (!target) {
    check.cluster = "berthd's own";
    check.credential = "berthd's own (in-cluster or KUBECONFIG)";
    if (options_.home_api == nullptr) return MakeError(ErrorKind::kInternal, "no home cluster");
    CheckCluster(*options_.home_api, check);
    return check;
  }
  check.cluster = target->Name();
  check.credential = target->Credential(request.org_id, request.runner_id);
  // A client of its own: a check never starts a launcher, nor waits on one being made.
  auto config = ConfigFor(*target, request.org_id, request.runner_id, options_.means);
  if (!config) {
    check.error = config.error().ToString();
    return check;
  }
  auto client = kube::MakeKubeClient(std::move(*config));
  CheckCluster(*client, check);
  return check;
}

std::vector<std::string> ClusterRouter::Clusters() const {
  MutexLock lock(mutex_);
  std::vector<std::string> names;
  names.reserve(clusters_.size());
  for (const auto& [key, cluster] : clusters_) names.push_back(cluster.name);
  return names;
}

}  // namespace berth::launch
