// A deployment's lifecycle: its states, which of them hold the environment (one at a time per
// environment), and the transitions allowed between them. The store enforces these; the
// dispatcher and the API ask before they move a deployment.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace berth {

enum class DeploymentState {
  kQueued,           // waits its turn in its environment
  kDispatched,       // a runner is being started for it
  kRunning,          // its runner reported in
  kWaitingApproval,  // its plan waits for a person; it keeps the environment meanwhile
  kSucceeded,
  kFailed,
  kCancelled,
};

std::string_view DeploymentStateName(DeploymentState state);
std::optional<DeploymentState> ParseDeploymentState(std::string_view name);
// The "state" of an API object (a deployment, one of its transitions); none when it has no
// state berth knows.
std::optional<DeploymentState> StateOf(const nlohmann::json& object);

bool IsTerminal(DeploymentState state);
// Holds its environment: dispatched, running, or waiting for approval (the apply must meet the
// state its plan was made against).
bool HoldsEnvironment(DeploymentState state);
// queued -> dispatched | cancelled; dispatched -> running | failed | cancelled;
// running -> waiting_approval | succeeded | failed | cancelled;
// waiting_approval -> dispatched (approved) | failed (stale) | cancelled.
bool CanTransition(DeploymentState from, DeploymentState to);

}  // namespace berth
