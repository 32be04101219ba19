#include "core/deployment_state.h"

#include "core/enum_names.h"

namespace berth {
namespace {

constexpr EnumNames<DeploymentState, 7> kNames = {{
    {DeploymentState::kQueued, "queued"},
    {DeploymentState::kDispatched, "dispatched"},
    {DeploymentState::kRunning, "running"},
    {DeploymentState::kWaitingApproval, "waiting_approval"},
    {DeploymentState::kSucceeded, "succeeded"},
    {DeploymentState::kFailed, "failed"},
    {DeploymentState::kCancelled, "cancelled"},
}};

}  // namespace

std::string_view DeploymentStateName(DeploymentState state) {
  return NameOf(kNames, state, "unknown");
}

std::optional<DeploymentState> ParseDeploymentState(std::string_view name) {
  return ValueOf(kNames, name);
}

std::optional<DeploymentState> StateOf(const nlohmann::json& object) {
  if (!object.is_object()) return std::nullopt;
  auto state = object.find("state");
  if (state == object.end() || !state->is_string()) return std::nullopt;
  return ParseDeploymentState(state->get_ref<const std::string&>());
}

bool IsTerminal(DeploymentState state) {
  return state == DeploymentState::kSucceeded || state == DeploymentState::kFailed ||
         state == DeploymentState::kCancelled;
}

bool HoldsEnvironment(DeploymentState state) {
  return state == DeploymentState::kDispatched || state == DeploymentState::kRunning ||
         state == DeploymentState::kWaitingApproval;
}

bool CanTransition(DeploymentState from, DeploymentState to) {
  using S = DeploymentState;
  switch (from) {
    case S::kQueued:
      return to == S::kDispatched || to == S::kCancelled;
    case S::kDispatched:
      return to == S::kRunning || to == S::kFailed || to == S::kCancelled;
    case S::kRunning:
      return to == S::kWaitingApproval || to == S::kSucceeded || to == S::kFailed ||
             to == S::kCancelled;
    case S::kWaitingApproval:
      return to == S::kDispatched || to == S::kFailed || to == S::kCancelled;
    case S::kSucceeded:
    case S::kFailed:
    case S::kCancelled:
      return false;
  }
  return false;
}

}  // namespace berth
