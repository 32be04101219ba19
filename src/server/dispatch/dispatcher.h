// The dispatcher: starts the deployments that may start (the oldest queued one of every
// environment that nothing holds), each with a run token scoped to its environment, on the
// launcher of its environment's runner, and records how each run ended. The store makes it
// safe for several dispatchers (several berthd) to race: one of them wins each deployment.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "core/mutex.h"
#include "crypto/jws.h"
#include "launch/launcher.h"
#include "store/store.h"

namespace berth::server {

struct DispatcherOptions {
  std::string state_url;  // berthd as runners reach it (the state backend's base URL)
  std::chrono::seconds token_lifetime{6 * 3600};
  int batch = 16;  // deployments started per tick at most
};

class Dispatcher {
 public:
  // local: the launcher of runners of type `local` (the embedded default).
  Dispatcher(store::Store& store, launch::Launcher& local, const crypto::Ed25519Signer& signer,
             DispatcherOptions options);

  // At start: the deployments a previous berthd left holding their environments are taken up
  // again. Their runs are re-attached, ended from what they left, or never started again.
  Result<void> Recover() EXCLUDES(mutex_);
  // Starts what may start now; how many it started.
  int Tick() EXCLUDES(mutex_);
  // Stops the run of a started deployment (the API's cancel).
  Result<void> Cancel(const std::string& org, const std::string& id);
  // The launcher's report of a run's end.
  void OnRunEnd(const std::string& run_id, const launch::RunOutcome& outcome) EXCLUDES(mutex_);

 private:
  // The launch of one deployment, or why it cannot be launched.
  Result<launch::LaunchRequest> Prepare(const store::Deployment& deployment);

  store::Store& store_;
  launch::Launcher& local_;
  const crypto::Ed25519Signer& signer_;
  const DispatcherOptions options_;
  Mutex mutex_;
  std::map<std::string, std::string> org_of_run_ GUARDED_BY(mutex_);  // run id -> organization
};

}  // namespace berth::server
