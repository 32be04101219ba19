// A test fixture: real berthd processes (replicas) on one real PostgreSQL database of the
// test's own, with faults that can be injected into that database, an organization with a
// runner (local, unless a derived fixture says otherwise) using berth's state storage, project
// web and environments e0, e1, ...
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "berthd_process.h"
#include "leftover_runs.h"
#include "postgres_faults.h"
#include "postgres_test_server.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {

class BerthdsOnPostgres : public ::testing::Test {
 protected:
  static constexpr int kLeaseSeconds = 3;

  void SetUp() override {
    auto dir = sys::TempDir::Create("berthds-on-postgres");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto pg = testenv::PostgresTestServer::Shared();
    ASSERT_TRUE(pg) << pg.error().ToString();
    auto db = (*pg)->CreateDatabase("berthds");
    ASSERT_TRUE(db) << db.error().ToString();
    database_ = (*pg)->Url(*db);
    database_name_ = *db;
    auto faults = testenv::PostgresFaults::Install(**pg, *db);
    ASSERT_TRUE(faults) << faults.error().ToString();
    faults_.emplace(std::move(*faults));
  }

  void TearDown() override {
    for (auto& replica : replicas_) {
      if (replica->Running()) {
        EXPECT_EQ(replica->Stop(), 0);
      }
    }
    // A replica killed mid-run left its runs going (pointed at a port nobody serves now).
    if (dir_) testenv::StopRunsUnder(dir_->Path());
  }

  // Starts n replicas on the database (the first makes the organization and its admin token),
  // and the objects the tests deploy with: a local runner for every environment of project
  // web, environments e0 .. e{envs-1}.
  void StartReplicas(int n, int envs) {
    for (int i = 0; i < n; ++i) {
      replicas_.push_back(std::make_unique<BerthdProcess>(
          dir_->Path(), "replica-" + std::string(1, char('a' + i))));
      StartReplica(i);
      if (HasFatalFailure()) return;
    }
    token_ = Replica(0).AdminToken();
    ASSERT_FALSE(token_.empty());
    std::vector<std::pair<std::string, std::string>> objects = {
        {"/runners", R"({"id":"here","runner_configuration":)" + runner_configuration_ +
                         R"(,"state_storage_configuration":{"type":"berth"}})"},
        {"/runner-rules", R"({"id":"all","runner_id":"here"})"},
        {"/projects", R"({"id":"web"})"},
        {"/env-types", R"({"id":"development"})"}};
    for (int e = 0; e < envs; ++e)
      objects.emplace_back("/projects/web/envs",
                           R"({"id":"e)" + std::to_string(e) + R"(","env_type_id":"development"})");
    for (const auto& [path, body] : objects) {
      auto created = Api(0).Call("POST", path, body);
      ASSERT_EQ(created.status, 201) << path << ": " << created.body;
    }
  }

  // The database by --database, or (database_from_env) by BERTH_DATABASE alone.
  void StartReplica(int i, bool database_from_env = false) {
    std::vector<std::string> flags = {"--encryption-key-file=" + (dir_->Path() / "keys").string(),
                                      "--replica-lease-seconds=" + std::to_string(kLeaseSeconds)};
    flags.insert(flags.end(), more_flags_.begin(), more_flags_.end());
    std::vector<std::string> env = more_env_;
    if (database_from_env)
      env.push_back("BERTH_DATABASE=" + database_);
    else
      flags.push_back("--database=" + database_);
    auto started = Replica(i).Start(flags, env);
    ASSERT_TRUE(started) << started.error().ToString();
  }

  BerthdProcess& Replica(int i) const { return *replicas_.at(static_cast<size_t>(i)); }
  BerthdClient Api(int i) const { return {Replica(i).Url(), token_, http_.get()}; }

  // The replica whose id the deployment names, by index.
  int OwnerOf(const nlohmann::json& deployment) const {
    for (int i = 0; i < static_cast<int>(replicas_.size()); ++i) {
      auto id = sys::ReadFile(Replica(i).DataDir() / "replica-id");
      if (id && id->substr(0, id->find('\n')) == deployment.value("replica", "")) return i;
    }
    return -1;
  }

  // Waits until the deployment runs its apply (the slow module printed its marker); the
  // deployment as it is then.
  nlohmann::json WaitUntilApplying(int via, const std::string& id) {
    EXPECT_TRUE(Api(via).WaitForLog(id, "berth-slow-started")) << Api(via).Log(id);
    return Api(via).Get(id);
  }

  // How often the slow module's resource was created in a deployment (tofu prints the
  // command's output once, after its own line).
  static int Creates(const std::string& log) {
    return Occurrences(log, "(local-exec): berth-slow-started");
  }

  nlohmann::json State(int via, const std::string& env) {
    return nlohmann::json::parse(Api(via).Call("GET", "/projects/web/envs/" + env + "/state").body);
  }

  std::filesystem::path Slow() const { return testenv::SourceDir() / "examples/slow"; }

  // What a derived fixture changes: every replica's flags and variables, the runner's type.
  std::vector<std::string> more_flags_, more_env_;
  std::string runner_configuration_ = R"({"type":"local"})";

  std::optional<sys::TempDir> dir_;
  std::string database_, token_;
  std::string database_name_;
  std::optional<testenv::PostgresFaults> faults_;
  std::vector<std::unique_ptr<BerthdProcess>> replicas_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
};

}  // namespace berth::server
