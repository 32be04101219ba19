// The runner and real state backends: a lock held by another run (Kubernetes backend, a Lease
// on the test apiserver), force-unlock, SIGTERM releasing the lock, and a PostgreSQL backend
// that refuses writes in the middle of an apply (the state must survive).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>

#include <map>
#include <regex>

#include "core/mutex.h"
#include "crypto/digest.h"
#include "kube_test_cluster.h"
#include "net/http_server.h"
#include "postgres_test_server.h"
#include "runner_harness.h"
#include "sys/files.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;

class RunnerKubernetesBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    cluster_ = *cluster;
    auto h = RunnerHarness::Create();
    ASSERT_TRUE(h);
    h_.emplace(std::move(*h));
    module_ = h_->Module("slow", {{"backend.tf", "terraform {\n  backend \"kubernetes\" {}\n}\n"}});
  }

  std::vector<std::string> Flags(const std::string& op, const std::string& suffix,
                                 const std::string& name, std::vector<std::string> more = {}) {
    std::vector<std::string> flags = {
        "--op=" + op,
        "--module=" + module_.string(),
        "--name=" + name,
        "--workdir=" + (h_->Root() / ("work-" + name)).string(),
        "--backend-config=secret_suffix=" + suffix,
        "--backend-config=namespace=default",
        "--backend-config=config_path=" + cluster_->AdminKubeconfig().string(),
        "--stop-timeout=20s"};
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  }

  testenv::KubeTestCluster* cluster_ = nullptr;
  std::optional<RunnerHarness> h_;
  fs::path module_;
};

TEST_F(RunnerKubernetesBackend, AHeldLockIsStateLockedAndForceUnlockFreesIt) {
  std::string holder_result;
  auto holder = h_->Start(Flags("apply", "locked", "holder"), &holder_result);
  std::string seen;
  ASSERT_TRUE(RunnerHarness::WaitForOutput(holder, "berth-slow-started", &seen)) << seen;

  auto blocked = h_->Run(Flags("plan", "locked", "blocked", {"--lock-timeout=1s"}));
  EXPECT_EQ(blocked.exit_code, 1);
  ASSERT_EQ(Kind(blocked), "StateLocked") << Describe(blocked);
  std::string message = blocked.result["error"]["message"];
  std::smatch id;
  ASSERT_TRUE(std::regex_search(message, id, std::regex("ID ([0-9a-f-]{36})"))) << message;
  // --lock=false: the caller holds the lock for the run, so tofu takes none and is not stopped.
  auto unlocking = h_->Run(Flags("plan", "locked", "unlocking", {"--lock=false"}));
  EXPECT_EQ(unlocking.exit_code, 0) << Describe(unlocking);

  // The holder dies without unlocking (as a deleted Pod would): the Lease stays held.
  holder.Signal(SIGKILL);
  holder.Wait();
  auto still = h_->Run(Flags("plan", "locked", "still", {"--lock-timeout=1s"}));
  ASSERT_EQ(Kind(still), "StateLocked") << Describe(still);

  auto unlocked = h_->Run(Flags("plan", "locked", "unlocked", {"--force-unlock=" + id[1].str()}));
  ASSERT_EQ(unlocked.exit_code, 0) << Describe(unlocked);
  bool ran_force_unlock = false;
  for (const auto& step : unlocked.result["steps"])
    ran_force_unlock |= step["name"] == "force-unlock";
  EXPECT_TRUE(ran_force_unlock);

  auto wrong = h_->Run(
      Flags("plan", "locked", "wrong", {"--force-unlock=00000000-0000-0000-0000-000000000000"}));
  EXPECT_EQ(Kind(wrong), "ForceUnlock") << Describe(wrong);
}

TEST_F(RunnerKubernetesBackend, SigtermStopsTofuCleanlyAndReleasesTheLock) {
  std::string result;
  auto holder = h_->Start(Flags("apply", "sigterm", "cancelled"), &result);
  std::string seen;
  ASSERT_TRUE(RunnerHarness::WaitForOutput(holder, "berth-slow-started", &seen)) << seen;
  // As the kubelet does: SIGTERM to the runner alone, not to its children.
  ASSERT_EQ(kill(holder.Pid(), SIGTERM), 0);
  auto cancelled = RunnerHarness::Finish(holder, result);
  EXPECT_EQ(cancelled.exit_code, 1);
  EXPECT_EQ(Kind(cancelled), "Cancelled") << Describe(cancelled);
  EXPECT_NE((seen + cancelled.log).find("stop requested (signal 15)"), std::string::npos);

  // The interrupted create left the resource tainted: the next plan replaces it.
  auto next = h_->Run(Flags("plan", "sigterm", "next", {"--lock-timeout=0s", "--allow-destroy"}));
  EXPECT_EQ(next.exit_code, 0) << "the lock was not released\n" << Describe(next);
}

// Runs SQL on the test server, failing the test on error.
void Sql(const std::string& conninfo, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), PQfinish);
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), PQclear);
  auto status = PQresultStatus(r.get());
  ASSERT_TRUE(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
      << PQerrorMessage(conn.get());
}

TEST(RunnerStatePersist, ABackendThatFailsOnWriteLeavesTheStateKeptAndSaysWhere) {
  auto pg = testenv::PostgresTestServer::Shared();
  ASSERT_TRUE(pg) << pg.error().ToString();
  // One statement each: CREATE DATABASE cannot run inside the implicit transaction of two.
  Sql((*pg)->ConnectionString(), "DROP DATABASE IF EXISTS persist");
  Sql((*pg)->ConnectionString(), "CREATE DATABASE persist");
  auto h = RunnerHarness::Create();
  ASSERT_TRUE(h);
  auto module = h->Module("file", {{"backend.tf", "terraform {\n  backend \"pg\" {}\n}\n"}});
  std::string target = (h->Root() / "world/file.txt").string();
  auto flags = [&](const std::string& content) {
    std::string config = (h->Root() / (content + ".tfvars.json")).string();
    EXPECT_TRUE(sys::WriteFileAtomic(
        config, nlohmann::json{{"path", target}, {"content", content}}.dump()));
    return std::vector<std::string>{
        "--op=apply",
        "--module=" + module.string(),
        "--name=persist",
        "--workdir=" + (h->Root() / "work").string(),
        "--config=" + config,
        "--backend-config=conn_str=" + (*pg)->Url("persist") + "?sslmode=disable"};
  };
  auto first = h->Run(flags("v1"));
  ASSERT_EQ(first.exit_code, 0) << Describe(first);

  Sql((*pg)->ConnectionString("persist"),
      "CREATE FUNCTION deny() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'writes denied by the "
      "test'; END $$ LANGUAGE plpgsql;"
      "CREATE TRIGGER deny BEFORE UPDATE ON terraform_remote_state.states FOR EACH ROW EXECUTE "
      "FUNCTION deny()");
  // The second run is in gateway mode: the state it cannot persist goes to berthd at once.
  Mutex mutex;
  std::map<std::string, std::string> artifacts;
  auto gateway_flags = flags("v2");  // writes v2.tfvars.json, which the gateway serves
  std::string inputs = *sys::ReadFile(h->Root() / "v2.tfvars.json");
  auto gateway = net::StartHttpServer({}, [&](const net::ServerRequest& r) {
    net::ServerResponse response{.status = 200, .body = "{}"};
    if (r.target.ends_with("/inputs")) response.body = inputs;
    if (r.target.ends_with("/id-token")) response.status = 404;  // as berthd: none asked
    if (auto at = r.target.find("/artifacts/"); at != std::string::npos) {
      MutexLock lock(mutex);
      artifacts[r.target.substr(at + 11)] = r.body;
    }
    return response;
  });
  ASSERT_TRUE(gateway);
  std::string token = (h->Root() / "token").string();
  ASSERT_TRUE(sys::WriteFileAtomic(token, "a-run-token"));
  for (const std::string& flag :
       {"--gateway=http://127.0.0.1:" + std::to_string((*gateway)->Port()),
        std::string("--run-id=persist"), "--token-file=" + token,
        "--inputs-hash=sha256:" + crypto::Sha256Hex(inputs)})
    gateway_flags.push_back(flag);
  auto second = h->Run(gateway_flags);
  EXPECT_EQ(second.exit_code, 1);
  ASSERT_EQ(Kind(second), "StatePersist") << Describe(second);
  std::string message = second.result["error"]["message"];
  auto kept = h->Root() / "work/errored.tfstate";
  EXPECT_NE(message.find(kept.string()), std::string::npos) << message;
  auto state = sys::ReadFile(kept);
  ASSERT_TRUE(state) << "the state that could not be persisted is gone";
  EXPECT_NE(state->find("\"v2\""), std::string::npos) << "the kept state is not the new one";
  EXPECT_EQ(*sys::ReadFile(target), "v2");
  MutexLock lock(mutex);
  EXPECT_EQ(artifacts["state"], *state) << "the gateway did not get the kept state";
}

}  // namespace
}  // namespace berth::testing
