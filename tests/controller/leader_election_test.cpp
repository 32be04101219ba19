// Leader election on the real apiserver's Leases, with time moved by hand: one replica leads,
// another waits while the Lease is fresh, takes it over once it expires, and the first then
// knows it lost.
#include "controller/leader_election.h"

#include <gtest/gtest.h>

#include <future>

#include "kube_test_cluster.h"

namespace berth::controller {
namespace {

class LeaderElection : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto admin = testenv::KubeTestCluster::SharedAdminWith({"berth-leases"});
    ASSERT_TRUE(admin) << admin.error().ToString();
    shared_api = admin->release();
  }

  static LeaderElectionOptions Options(const std::string& lease, const std::string& who) {
    return {.ns = "berth-leases",
            .name = lease,
            .identity = who,
            .lease_duration = std::chrono::seconds(15)};
  }

  static inline kube::KubeClient* shared_api = nullptr;
};

TEST_F(LeaderElection, OneLeadsTheOtherTakesOverOnlyOnceTheLeaseExpires) {
  ManualClock clock;
  LeaderElector a(*shared_api, clock, Options("turns", "replica-a"));
  LeaderElector b(*shared_api, clock, Options("turns", "replica-b"));
  EXPECT_EQ(a.TryAcquireOrRenew().value(), true);
  EXPECT_EQ(b.TryAcquireOrRenew().value(), false);
  clock.Advance(std::chrono::seconds(10));
  EXPECT_EQ(a.TryAcquireOrRenew().value(), true) << "the leader renews";
  clock.Advance(std::chrono::seconds(10));
  EXPECT_EQ(b.TryAcquireOrRenew().value(), false) << "renewed 10 s ago: still fresh";
  clock.Advance(std::chrono::seconds(6));  // a stopped renewing 16 s ago
  EXPECT_EQ(b.TryAcquireOrRenew().value(), true);
  EXPECT_EQ(a.TryAcquireOrRenew().value(), false) << "the old leader sees it lost";
  auto lease = shared_api->Get(kube::kLeases, "berth-leases", "turns");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "replica-b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

TEST_F(LeaderElection, TwoReplicasRacingForAFreeLeaseMakeOneLeader) {
  ManualClock clock;
  LeaderElector a(*shared_api, clock, Options("race", "replica-a"));
  LeaderElector b(*shared_api, clock, Options("race", "replica-b"));
  auto first = std::async(std::launch::async, [&] { return a.TryAcquireOrRenew(); });
  auto second = std::async(std::launch::async, [&] { return b.TryAcquireOrRenew(); });
  auto won_a = first.get();
  auto won_b = second.get();
  ASSERT_TRUE(won_a && won_b);
  EXPECT_NE(*won_a, *won_b) << "exactly one leads";
}

}  // namespace
}  // namespace berth::controller
