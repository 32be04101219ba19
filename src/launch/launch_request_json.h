// A launch as JSON: what berthd queues for a kubernetes-agent (docs/agents.md), which launches
// it with the Kubernetes launcher in its own cluster. Never the run's token (berthd mints one
// as it delivers the command) and never the placement fields (the agent's launcher adds them).
#pragma once

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "launch/launcher.h"

namespace berth::launch {

nlohmann::json LaunchRequestToJson(const LaunchRequest& request);
// Strict: every field of its type, no field it does not know (named in the error), a run id.
Result<LaunchRequest> LaunchRequestFromJson(const nlohmann::json& doc);

}  // namespace berth::launch
