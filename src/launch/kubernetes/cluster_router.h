// The launcher of every kubernetes runner: a run goes to the cluster its runner names
// (cluster_target.h), each cluster reached by a client and a Kubernetes launcher of its own,
// made at the cluster's first run and kept; a runner that names none uses berthd's own
// cluster's launcher. Nothing falls back to berthd's own cluster: a cluster that cannot be
// reached fails the run's launch, saying which and why.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "kube/kube_api.h"
#include "launch/kubernetes/cluster_check.h"
#include "launch/kubernetes/cluster_target.h"
#include "launch/launcher.h"

namespace berth::launch {

class ClusterRouter final : public Launcher {
 public:
  // A started launcher for the cluster api reaches, named for messages, its first watch on ns
  // (the namespace of the run that needs it: the one berthd is sure to have rights in there).
  using LauncherOn = std::function<Result<std::unique_ptr<Launcher>>(
      kube::KubeApi& api, const std::string& name, const std::string& ns)>;
  struct Options {
    ClusterMeans means;
    LauncherOn make;
    // Where runs in another cluster reach berthd (its public URL): berthd's own cluster's
    // Service address means nothing there.
    std::string berthd_url_elsewhere;
    // Told of the adopted runs whose cluster cannot be reached.
    RunObserver* observer = nullptr;
    // berthd's own cluster's client, for checks of the runners that name no cluster.
    kube::KubeApi* home_api = nullptr;
  };
  // home: the launcher of berthd's own cluster.
  ClusterRouter(Launcher& home, Options options);
  ~ClusterRouter() override;

  Result<void> Launch(const LaunchRequest& request) override EXCLUDES(mutex_);
  Result<void> Cancel(const std::string& run_id) override EXCLUDES(mutex_);
  // Each cluster's launcher adopts its own runs; the runs of a cluster that cannot be reached
  // now end as RunnerLost, saying so (their runner may go on and post its result).
  Result<void> Recover(const std::vector<LaunchRequest>& adopt, const RunIsHeld& held) override
      EXCLUDES(mutex_);
  bool SharedAcrossReplicas() const override { return true; }
  bool KeptAfterResult(const std::string& run_id) const override EXCLUDES(mutex_);
  void Release(const std::string& run_id) override EXCLUDES(mutex_);
  bool ContinuesIn(const std::string& plan_run_id) const override EXCLUDES(mutex_);
  std::optional<std::string> BerthdUrlForRunners(const RunnerSettings& runner) const override;

  // What a run of request's runner would meet in its cluster (cluster_check.h), without
  // launching anything; an error only for a configuration that names no cluster it can parse.
  Result<ClusterCheck> Check(const LaunchRequest& request) const;

  // The clusters reached so far, by name (for status and tests).
  std::vector<std::string> Clusters() const EXCLUDES(mutex_);

 private:
  struct Cluster {
    std::string name;
    std::unique_ptr<kube::KubeClient> client;
    std::unique_ptr<Launcher> launcher;
  };
  // The launcher of the cluster request's runner names; made on first use.
  Result<Launcher*> LauncherFor(const LaunchRequest& request) EXCLUDES(mutex_);
  // berthd's own cluster's launcher, then every other cluster's: a run is known to one of them
  // only, and each ignores the runs it does not know.
  std::vector<Launcher*> All() const EXCLUDES(mutex_);

  Launcher& home_;
  const Options options_;
  mutable Mutex mutex_;
  std::map<std::string, Cluster> clusters_ GUARDED_BY(mutex_);  // by ClusterTarget::Key
  Mutex making_;  // one cluster made at a time: its launcher's start waits on its API
};

}  // namespace berth::launch
