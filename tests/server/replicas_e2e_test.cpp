// Several real berthd processes on one real PostgreSQL database, as a team runs them behind a
// load balancer: deployments spread over the replicas and each is applied once; a replica
// killed with SIGKILL mid-apply loses its local run (its machine may be gone: never started
// again) and the environment's lock with it; a cancel sent to a replica that does not run the
// deployment stops it; replicas killed and restarted at random leave every deployment ended,
// none applied twice and no lock held.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "berthds_on_postgres.h"

namespace berth::server {
namespace {

using nlohmann::json;

using ReplicasE2e = BerthdsOnPostgres;

TEST_F(ReplicasE2e, DeploymentsSpreadOverTheReplicasAndEachIsAppliedOnce) {
  StartReplicas(2, 8);
  if (HasFatalFailure()) return;
  std::vector<std::string> ids;
  ids.reserve(8);
  for (int e = 0; e < 8; ++e) {
    // A replica that is told of a deployment starts it at once; the others see it within 200 ms.
    ids.push_back(Api(e % 2).Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 0}}}},
                                    "web/e" + std::to_string(e)));
  }
  std::set<int> owners;
  for (const std::string& id : ids) {
    json done = Api(0).WaitFor(id, {"succeeded", "failed", "cancelled"});
    ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Api(0).Log(id);
    owners.insert(OwnerOf(done));
    EXPECT_EQ(Creates(Api(1).Log(id)), 1) << Api(1).Log(id);
  }
  EXPECT_EQ(owners, (std::set<int>{0, 1}));
}

// The database's URL from BERTH_DATABASE alone (as the Helm chart passes it, from a Secret):
// a replica started so shares the other's database.
TEST_F(ReplicasE2e, AReplicaGivenItsDatabaseByTheEnvironmentSharesIt) {
  StartReplicas(2, 1);
  if (HasFatalFailure()) return;
  ASSERT_EQ(Replica(1).Stop(), 0);
  StartReplica(1, /*database_from_env=*/true);
  if (HasFatalFailure()) return;
  auto made = Api(1).Call("POST", "/projects", R"({"id":"from-env"})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(Api(0).Call("GET", "/projects/from-env").status, 200);
}

TEST_F(ReplicasE2e, AReplicaKilledMidApplyLosesItsLocalRunAndTheLockGoesWithIt) {
  StartReplicas(2, 1);
  if (HasFatalFailure()) return;
  std::string first =
      Api(0).Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 120}}}}, "web/e0");
  json applying = WaitUntilApplying(0, first);
  const int owner = OwnerOf(applying), survivor = 1 - owner;
  ASSERT_GE(owner, 0) << applying.dump(2);
  EXPECT_FALSE(State(survivor, "e0")["lock"].is_null()) << "the apply holds the lock";
  // The owner's machine is gone: berthd and its runner with it.
  auto pid = sys::ReadFile(Replica(owner).DataDir() / "runs" / first / "pid");
  ASSERT_TRUE(pid && !pid->empty());
  Replica(owner).Kill();
  kill(-std::stoi(*pid), SIGKILL);
  std::string next = Api(survivor).Deploy(
      Slow(), {{"op", "apply"}, {"allow_destroy", true}, {"variables", {{"seconds", 0}}}},
      "web/e0");

  json lost = Api(survivor).WaitFor(first, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(lost["state"], "failed") << lost.dump(2);
  EXPECT_EQ(lost["result"]["error"]["kind"], "RunnerLost") << lost.dump(2);
  EXPECT_NE(lost["result"]["error"]["message"].get<std::string>().find("lease"), std::string::npos)
      << lost.dump(2);
  EXPECT_EQ(OwnerOf(lost), survivor);
  json done = Api(survivor).WaitFor(next, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Api(survivor).Log(next);
  EXPECT_EQ(Creates(Api(survivor).Log(first)), 1) << "the lost apply was started again";
  EXPECT_TRUE(State(survivor, "e0")["lock"].is_null());
}

TEST_F(ReplicasE2e, ACancelSentToAReplicaThatDoesNotRunTheDeploymentStopsIt) {
  StartReplicas(2, 1);
  if (HasFatalFailure()) return;
  std::string id =
      Api(0).Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 120}}}}, "web/e0");
  json applying = WaitUntilApplying(0, id);
  const int owner = OwnerOf(applying), other = 1 - owner;
  ASSERT_GE(owner, 0) << applying.dump(2);
  EXPECT_EQ(Api(other).Call("POST", "/deployments/" + id + "/cancel").status, 202);
  json done = Api(other).WaitFor(id, {"succeeded", "failed", "cancelled"});
  EXPECT_EQ(done["state"], "cancelled") << done.dump(2) << Api(other).Log(id);
  EXPECT_TRUE(State(other, "e0")["lock"].is_null());
}

// 200 deployments over 20 environments on three replicas, one of them killed with SIGKILL and
// started again every few seconds: every deployment ends (succeeded, or RunnerLost where its
// replica died under it and another took the run over), none is applied twice, and no
// environment is left locked.
TEST_F(ReplicasE2e, ReplicasKilledAndRestartedAtRandomLeaveEveryDeploymentEndedOnce) {
  constexpr int kReplicas = 3, kEnvs = 20, kDeployments = 200;
  StartReplicas(kReplicas, kEnvs);
  if (HasFatalFailure()) return;
  // The test's calls and the kills take turns: a call never meets a replica dying under it
  // (a load balancer would retry it elsewhere).
  std::mutex turns;
  auto any_up = [&](const std::function<bool(int)>& call) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::lock_guard lock(turns);
      int via = attempt % kReplicas;
      if (Replica(via).Running() && call(via)) return true;
    }
    return false;
  };
  std::atomic<bool> stop_chaos{false};
  std::atomic<int> kills{0};
  std::thread chaos([&] {
    std::mt19937 random(20261202);  // NOLINT(bugprone-random-generator-seed): a failure repeats
    while (!stop_chaos.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500 + random() % 2000));
      int victim = static_cast<int>(random() % kReplicas);
      {
        std::lock_guard lock(turns);
        if (stop_chaos.load()) break;
        Replica(victim).Kill();
        ++kills;
      }
      // Sometimes back within its lease (it takes its runs up), sometimes after (they were
      // taken over).
      constexpr unsigned kLeaseTwiceMs = kLeaseSeconds * 2000;
      std::this_thread::sleep_for(std::chrono::milliseconds(random() % kLeaseTwiceMs));
      std::lock_guard lock(turns);
      StartReplica(victim);
    }
  });
  std::vector<std::string> ids;
  ids.reserve(kDeployments);
  for (int i = 0; i < kDeployments; ++i) {
    std::string id;
    any_up([&](int via) {
      id = Api(via).Deploy(
          Slow(),
          {{"op", "apply"}, {"allow_destroy", true}, {"variables", {{"seconds", i / kEnvs % 2}}}},
          "web/e" + std::to_string(i % kEnvs));
      return !id.empty();
    });
    ASSERT_FALSE(id.empty());
    ids.push_back(id);
  }
  std::map<std::string, int> outcomes;
  for (const std::string& id : ids) {
    json end;
    for (int i = 0; i < 1200; ++i) {
      any_up([&](int via) {
        end = Api(via).Get(id);
        return end.is_object();
      });
      std::string state = end.value("state", "");
      if (state == "succeeded" || state == "failed" || state == "cancelled") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string outcome = end.value("state", "");
    if (outcome == "failed") outcome += " " + end["result"]["error"].value("kind", "");
    ++outcomes[outcome];
    EXPECT_TRUE(outcome == "succeeded" || outcome == "failed RunnerLost") << end.dump(2);
    std::string log;
    any_up([&](int via) {
      log = Api(via).Log(id);
      return true;
    });
    EXPECT_LE(Occurrences(log, "Apply complete!"), 1) << id << " was applied twice:\n" << log;
  }
  stop_chaos = true;
  chaos.join();
  // A berthd dies with the thread that started it (the parent-death signal): the ones the
  // chaos thread started are started again from here.
  for (int i = 0; i < kReplicas; ++i) {
    Replica(i).Kill();
    StartReplica(i);
  }
  for (int e = 0; e < kEnvs; ++e)
    EXPECT_TRUE(State(0, "e" + std::to_string(e))["lock"].is_null()) << "e" << e;
  EXPECT_GT(kills.load(), 0);
  EXPECT_GT(outcomes["succeeded"], kDeployments / 2) << ::testing::PrintToString(outcomes);
  RecordProperty("outcomes", ::testing::PrintToString(outcomes));
  RecordProperty("kills", kills.load());
}

}  // namespace
}  // namespace berth::server
