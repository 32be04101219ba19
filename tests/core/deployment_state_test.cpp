// The deployment state machine, every pair of states: exactly the documented transitions are
// allowed, terminal states go nowhere, and the states that hold an environment are the three
// between dispatch and the end.
#include "core/deployment_state.h"

#include <gtest/gtest.h>

#include <set>

namespace berth {
namespace {

using S = DeploymentState;
constexpr S kAll[] = {S::kQueued,    S::kDispatched, S::kRunning,  S::kWaitingApproval,
                      S::kSucceeded, S::kFailed,     S::kCancelled};

TEST(DeploymentState, AllowsExactlyTheDocumentedTransitions) {
  const std::set<std::pair<S, S>> allowed = {
      {S::kQueued, S::kDispatched},      {S::kQueued, S::kCancelled},
      {S::kDispatched, S::kRunning},     {S::kDispatched, S::kFailed},
      {S::kDispatched, S::kCancelled},   {S::kRunning, S::kWaitingApproval},
      {S::kRunning, S::kSucceeded},      {S::kRunning, S::kFailed},
      {S::kRunning, S::kCancelled},      {S::kWaitingApproval, S::kDispatched},
      {S::kWaitingApproval, S::kFailed}, {S::kWaitingApproval, S::kCancelled}};
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(CanTransition(from, to), allowed.contains({from, to}))
          << DeploymentStateName(from) << " -> " << DeploymentStateName(to);
    }
  }
}

TEST(DeploymentState, NamesRoundTripAndTheHoldersAreTheExecutingOnes) {
  std::set<S> holders;
  for (S state : kAll) {
    EXPECT_EQ(ParseDeploymentState(DeploymentStateName(state)), state);
    if (HoldsEnvironment(state)) holders.insert(state);
    EXPECT_FALSE(IsTerminal(state) && HoldsEnvironment(state));
  }
  EXPECT_EQ(holders, (std::set<S>{S::kDispatched, S::kRunning, S::kWaitingApproval}));
  EXPECT_FALSE(ParseDeploymentState("done"));
}

// What the CLI reads of berthd's answers: a state it knows, or none, whatever the answer holds.
TEST(DeploymentState, AnAnswersStateIsOneBerthKnowsOrNone) {
  EXPECT_EQ(StateOf(nlohmann::json{{"state", "waiting_approval"}}), S::kWaitingApproval);
  for (const nlohmann::json& odd :
       {nlohmann::json{{"state", "done"}}, nlohmann::json{{"state", 3}}, nlohmann::json::object(),
        nlohmann::json::array({"state"}), nlohmann::json("succeeded")})
    EXPECT_EQ(StateOf(odd), std::nullopt) << odd.dump();
}

}  // namespace
}  // namespace berth
