// Events of a deployment's runs, as Kubernetes Events are kept: stored (the same one said again
// counts up), logged by berthd, and written once into the deployment's log so that whoever
// follows it sees them in place.
#pragma once

#include <string>

#include "launch/launcher.h"
#include "store/store.h"
#include "sys/logger.h"

namespace berth::server {

void RecordDeploymentEvent(store::Store& store, sys::Logger& log, const std::string& org,
                           const std::string& deployment, const std::string& run_id,
                           const launch::LaunchEvent& event);

}  // namespace berth::server
