// A run token is good only while its run is: from its launch until berthd has seen its runner
// end. The gateway and the state backend both ask here, so that a token kept past that (by a
// module that copied it) opens nothing, while a runner that is still stopping after its
// deployment ended (a deadline, a cancel) can still save its state and send its log.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "store/store.h"

namespace berth::server {

// The artifact that marks a run as ended is named this and the run's id.
inline constexpr std::string_view kRunEndedMarkerPrefix = "run-ended:";

// The deployment whose current run is run_id, until MarkRunEnded; kFailedPrecondition after
// that, or if it is no deployment's run.
Result<store::Deployment> LiveDeploymentOfRun(store::Store& store, const std::string& run_id);

// The same check without reading the deployment (the state backend's, at each request).
Result<void> RunIsLive(store::Store& store, const std::string& run_id);

// From now on the run's token opens nothing (the dispatcher, when its launcher reports its end).
Result<void> MarkRunEnded(store::Store& store, const store::Deployment& deployment,
                          const std::string& run_id);

}  // namespace berth::server
