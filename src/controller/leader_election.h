// Leader election with a coordination.k8s.io Lease, as client-go's leaderelection does: one
// replica holds the Lease and renews it; the others take it over once it has not been renewed
// for its duration. Only the holder reconciles. Every write names the resourceVersion it read,
// so two replicas cannot both win the same turn.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::controller {

struct LeaderElectionOptions {
  std::string ns;  // the controller's namespace
  std::string name = "berth-controller";
  std::string identity;  // this replica (its Pod name)
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds retry_period{2};
};

class LeaderElector {
 public:
  LeaderElector(kube::KubeApi& api, Clock& clock, LeaderElectionOptions options)
      : api_(api), clock_(clock), options_(std::move(options)) {}
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One turn: takes the Lease when it is free or expired, renews it when held. True when this
  // replica holds it afterwards.
  Result<bool> TryAcquireOrRenew();

  // Blocks until this replica leads (or stop() turns true: false), then renews in the
  // background every retry period; on_lost runs once if the Lease is lost or cannot be renewed
  // within its duration.
  bool AcquireAndKeep(const std::function<bool()>& stop, std::function<void()> on_lost);

 private:
  kube::KubeApi& api_;
  Clock& clock_;
  const LeaderElectionOptions options_;
  std::atomic<bool> stopping_{false};
  std::thread renewer_;
};

}  // namespace berth::controller
