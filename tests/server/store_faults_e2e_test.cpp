// A real berthd on a real PostgreSQL that fails: writes refused, failing for a while, or
// stalled (testenv::PostgresFaults). Nothing is lost: a log chunk the store refused arrives
// whole and once; a state write that stalls only slows the apply; a state tofu could not
// persist because the store refused it is pushed by berthd, marked rescued, as soon as the
// store takes writes again, and the next deployment starts from it.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "berthds_on_postgres.h"

namespace berth::server {
namespace {

using nlohmann::json;
using StoreFaultsE2e = BerthdsOnPostgres;

const std::vector<std::string> kEnded = {"succeeded", "failed", "cancelled"};

// How many writes to table the fault hit (-1: not known).
int Hits(const testenv::PostgresFaults& faults, const std::string& table) {
  auto hits = faults.Hits(table);
  return hits ? *hits : -1;
}

json Versions(const BerthdClient& api) {
  return json::parse(api.Call("GET", "/projects/web/envs/e0/state/versions").body)["items"];
}

TEST_F(StoreFaultsE2e, AStateTofuCouldNotPersistIsPushedByBerthdOnceTheStoreTakesWritesAgain) {
  StartReplicas(1, 1);
  if (HasFatalFailure()) return;
  const BerthdClient api = Api(0);
  std::string first =
      api.Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 0}}}}, "web/e0");
  ASSERT_EQ(api.WaitFor(first, kEnded)["state"], "succeeded") << api.Log(first);

  // The store refuses every state write (as a conflict: tofu does not retry it), and the
  // runner's own push of errored.tfstate with it.
  ASSERT_TRUE(faults_->On("state_versions", {.sqlstate = "23505"}));
  std::string second = api.Deploy(
      Slow(), {{"op", "apply"}, {"allow_destroy", true}, {"variables", {{"seconds", 1}}}},
      "web/e0");
  json failed = api.WaitFor(second, kEnded);
  ASSERT_EQ(failed["state"], "failed") << failed.dump(2) << api.Log(second);
  EXPECT_EQ(failed["result"]["error"]["kind"], "StatePersist") << failed.dump(2);
  EXPECT_GE(Hits(*faults_, "state_versions"), 2) << "tofu's write and the runner's push";
  EXPECT_EQ(Versions(api).size(), 1u);
  EXPECT_EQ(Occurrences(api.Log(second), "StateRescued"), 0) << "the store still refuses";

  ASSERT_TRUE(faults_->Heal("state_versions"));
  ASSERT_TRUE(api.WaitForLog(second, "StateRescued")) << api.Log(second);
  json versions = Versions(api);
  ASSERT_EQ(versions.size(), 2u) << versions.dump(2);
  EXPECT_EQ(versions[1]["run_id"], "rescued: errored.tfstate of run " + second) << versions.dump(2);
  json history = State(0, "e0")["history"];
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history[0]["action"], "rescue") << history.dump(2);

  // The rescued state is the one the apply made: the same deployment again changes nothing.
  std::string third =
      api.Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 1}}}}, "web/e0");
  ASSERT_EQ(api.WaitFor(third, kEnded)["state"], "succeeded") << api.Log(third);
  EXPECT_EQ(Creates(api.Log(third)), 0) << api.Log(third);
  EXPECT_EQ(Versions(api).size(), 2u) << "an apply of nothing wrote a state";
}

TEST_F(StoreFaultsE2e, LogChunksTheStoreFailsToWriteArriveWholeAndOnce) {
  StartReplicas(1, 1);
  if (HasFatalFailure()) return;
  const BerthdClient api = Api(0);
  // The first two log writes (the first chunk and its retry) fail as a lost database
  // connection does (503 to the runner).
  ASSERT_TRUE(faults_->On("deployment_logs", {.count = 2, .sqlstate = "08006"}));
  std::string id = api.Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 0}}}}, "web/e0");
  json done = api.WaitFor(id, kEnded);
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << api.Log(id);
  EXPECT_EQ(Hits(*faults_, "deployment_logs"), 2);
  std::string log = api.Log(id);
  EXPECT_EQ(Occurrences(log, "Apply complete!"), 1) << log;
  EXPECT_EQ(Creates(log), 1) << log;
}

TEST_F(StoreFaultsE2e, AStateWriteThatStallsSlowsTheApplyAndLosesNothing) {
  StartReplicas(1, 1);
  if (HasFatalFailure()) return;
  const BerthdClient api = Api(0);
  ASSERT_TRUE(faults_->On("state_versions", {.count = 1, .stall_ms = 2000}));
  std::string id = api.Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 0}}}}, "web/e0");
  json done = api.WaitFor(id, kEnded);
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << api.Log(id);
  EXPECT_EQ(Hits(*faults_, "state_versions"), 1);
  EXPECT_EQ(Versions(api).size(), 1u);
  EXPECT_TRUE(State(0, "e0")["lock"].is_null());
}

// A database that drops berthd's connections and refuses new ones for a while (a restart, a
// failover): berthd stays alive (/healthz, so that Kubernetes does not restart it for someone
// else's outage), says it is not ready (/readyz: take no traffic), and once the database
// answers again connects anew and serves as before.
TEST_F(StoreFaultsE2e, ABerthdWhoseDatabaseIsAwayIsAliveButNotReadyThenReconnects) {
  StartReplicas(1, 1);
  if (HasFatalFailure()) return;
  auto probe = [&](const std::string& path) {
    auto answer = http_->Send({.url = Replica(0).Url() + path});
    return answer ? answer->status : 0;
  };
  EXPECT_EQ(probe("/readyz"), 200);
  auto pg = testenv::PostgresTestServer::Shared();
  ASSERT_TRUE(pg);
  const std::string cut = "ALTER DATABASE " + database_name_ +
                          " ALLOW_CONNECTIONS false; SELECT pg_terminate_backend(pid) FROM "
                          "pg_stat_activity WHERE datname = '" +
                          database_name_ + "'";
  ASSERT_TRUE((*pg)->Execute("postgres", cut));
  EXPECT_EQ(probe("/readyz"), 503);
  EXPECT_EQ(probe("/healthz"), 200);
  ASSERT_TRUE(
      (*pg)->Execute("postgres", "ALTER DATABASE " + database_name_ + " ALLOW_CONNECTIONS true"));
  int ready = 0;
  for (int i = 0; i < 100 && (ready = probe("/readyz")) != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ready, 200);
  for (int i = 0; i < 4; ++i) {  // every pooled connection, not only the one /readyz used
    auto made = Api(0).Call("POST", "/projects", R"({"id":"after-)" + std::to_string(i) + "\"}");
    EXPECT_EQ(made.status, 201) << made.body;
  }
}

}  // namespace
}  // namespace berth::server
