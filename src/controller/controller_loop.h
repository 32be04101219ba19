// berth-controller's loop: an informer over Terraform objects (no polling) feeds a work queue;
// `concurrency` workers reconcile one object each at a time. A status write of its own does
// not wake an object again: only a new object, a new generation (its spec changed or it was
// deleted), an object it depends on getting Ready (or applying anew), or the time a reconcile
// asked to come back (its interval, or retryInterval after a failure).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/reconciler.h"
#include "controller/work_queue.h"
#include "core/mutex.h"
#include "kube/informer.h"

namespace berth::controller {

struct ControllerOptions {
  std::string watch_namespace;  // empty: every namespace
  int concurrency = 4;
};

class ControllerLoop {
 public:
  ControllerLoop(kube::KubeApi& api, Reconciler& reconciler, ControllerOptions options);
  ~ControllerLoop();
  ControllerLoop(const ControllerLoop&) = delete;
  ControllerLoop& operator=(const ControllerLoop&) = delete;

  void Start();
  void Stop();
  bool WaitForSync(std::chrono::milliseconds timeout) { return informer_.WaitForSync(timeout); }
  // Prometheus text: reconciles by result, the queue's depth, the informer's lists and watches.
  std::string MetricsText() const EXCLUDES(mutex_);

 private:
  void OnEvent(const std::string& type, const nlohmann::json& object) EXCLUDES(mutex_);
  void Work();

  Reconciler& reconciler_;
  const ControllerOptions options_;
  kube::Informer informer_;
  WorkQueue queue_;
  std::vector<std::thread> workers_;
  mutable Mutex mutex_;
  // What the last event of each object said, by key.
  struct Seen {
    int64_t generation = 0;
    std::string ready;  // ReadySignal: a change to non-empty wakes its dependents
    std::vector<std::string> depends_on;
  };
  std::map<std::string, Seen> seen_ GUARDED_BY(mutex_);
  // Each dependency's dependents, by key (spec.dependsOn reversed).
  std::map<std::string, std::set<std::string>> dependents_ GUARDED_BY(mutex_);
  uint64_t succeeded_ GUARDED_BY(mutex_) = 0;
  uint64_t failed_ GUARDED_BY(mutex_) = 0;
};

}  // namespace berth::controller
