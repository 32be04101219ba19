// Kubernetes Events about a run (events.k8s.io/v1), posted with the Pod's service account when
// the runner is given --event-object. Best effort: posting happens on a background thread
// with a short timeout, stops after repeated failures, and never fails or slows the run.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "net/http_client.h"

namespace berth::runner {

class RunEvents {
 public:
  virtual ~RunEvents() = default;
  // reason: RunStarted, StepStarted, StepSucceeded, StepFailed, PlanSummary, RunFinished.
  virtual void Record(const std::string& reason, const std::string& note, bool warning) = 0;
};

// Records nothing: no --event-object.
class NoRunEvents final : public RunEvents {
 public:
  void Record(const std::string&, const std::string&, bool) override {}
};

struct EventTarget {
  std::string kind, ns, name;  // from --event-object=KIND/NAMESPACE/NAME
};

// Where the API is and who the runner is, from the Pod's environment: KUBERNETES_SERVICE_HOST
// and _PORT, the service account folder (token, ca.crt; BERTH_SERVICE_ACCOUNT_DIR overrides
// /var/run/secrets/kubernetes.io/serviceaccount), POD_NAME for the reporting instance.
struct InClusterApi {
  std::string url;
  std::string account_dir;
  std::string instance;
};

class KubeRunEvents final : public RunEvents {
 public:
  static constexpr int kMaxConsecutiveFailures = 3;
  static constexpr size_t kMaxQueued = 256;

  // warn receives one line when posting is given up.
  KubeRunEvents(EventTarget target, InClusterApi api, std::string job_name,
                std::function<void(const std::string&)> warn);
  // Waits up to flush_timeout for queued events, then stops.
  ~KubeRunEvents() override;

  void Record(const std::string& reason, const std::string& note, bool warning) override
      EXCLUDES(mutex_);

 private:
  struct Pending {
    std::string reason, note;
    bool warning;
    std::string time;
  };
  void Loop() EXCLUDES(mutex_);
  bool Post(const Pending& event);

  EventTarget target_;
  InClusterApi api_;
  std::string job_name_;
  std::function<void(const std::string&)> warn_;
  std::unique_ptr<net::HttpClient> http_;
  Mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<Pending> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  int failures_ = 0;          // the posting thread's own
  std::string last_failure_;  // the posting thread's own
  std::thread thread_;
};

// The events of a run: KubeRunEvents when --event-object is set and the Pod's environment
// names an API server, NoRunEvents otherwise (with a warning when only the API is missing).
std::unique_ptr<RunEvents> MakeRunEvents(const std::string& event_object,
                                         const std::string& job_name,
                                         const std::vector<std::string>& environment,
                                         std::function<void(const std::string&)> warn);

}  // namespace berth::runner
