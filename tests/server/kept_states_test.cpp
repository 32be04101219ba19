// A state tofu could not persist, kept by its run as the deployment's `state` artifact, is
// pushed by berthd once the run has ended: as a new version marked rescued, once, and only when
// it is the same state (lineage) further on (serial) than the environment's newest; what is
// not (another lineage, an older serial, bytes that are no state, a storage berthd does not
// write) stays where it is and the deployment says why. A store that refuses for now (a run
// holds the lock) gets it on a later pass.
#include "server/dispatch/kept_states.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api_fixture.h"
#include "server/live_run.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr char kKey[] = "acme/web/dev";

class KeptStatesTest : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    kept_.emplace(*store_, log_);
    UseStorage("berth");
    ASSERT_EQ(Call("POST", "/orgs/acme/runner-rules", R"({"id":"all","runner_id":"here"})").status,
              201);
  }

  void UseStorage(const std::string& type) {
    json runner = {{"id", "here"},
                   {"runner_configuration", {{"type", "local"}}},
                   {"state_storage_configuration", {{"type", type}}}};
    if (type == "s3") {
      runner["state_storage_configuration"]["bucket"] = "states";
      runner["state_storage_configuration"]["region"] = "eu-west-1";
    }
    auto put = Call(runner_made_ ? "PUT" : "POST",
                    runner_made_ ? "/orgs/acme/runners/here" : "/orgs/acme/runners", runner.dump());
    ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
    runner_made_ = true;
  }

  static std::string State(const std::string& lineage, int serial, const std::string& value) {
    return json{{"version", 4},
                {"serial", serial},
                {"lineage", lineage},
                {"outputs", {{"v", {{"value", value}, {"type", "string"}}}}}}
        .dump();
  }

  // Deployment id, whose run id kept content and has ended.
  void RunKept(const std::string& id, const std::string& content, bool ended = true) {
    store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = id};
    d.spec = DeploymentSpec::FromRequest(
                 {{"op", "apply"}, {"source", {{"bundle", "b-" + std::string(32, '0')}}}})
                 .value();
    ASSERT_TRUE(store_->Deployments().Create(d));
    ASSERT_TRUE(store_->DeploymentData().PutArtifact(
        "acme", id, {.name = "state", .run_id = id, .content = content}));
    if (ended) {
      ASSERT_TRUE(MarkRunEnded(*store_, d, id));
    }
  }

  // The reasons and messages of a deployment's events, "Reason: message" each.
  std::vector<std::string> Events(const std::string& id) {
    std::vector<std::string> out;
    for (const auto& e : store_->DeploymentData().Events("acme", id).value())
      out.push_back(e.reason + ": " + e.message);
    return out;
  }

  int64_t Newest() {
    auto versions = store_->States().Versions(kKey).value();
    return versions.empty() ? 0 : versions.back().version;
  }

  sys::Logger log_{sys::Logger::Format::kText, 0, -1};
  std::optional<KeptStates> kept_;
  bool runner_made_ = false;
};

TEST_F(KeptStatesTest, AKeptStateFurtherOnIsPushedOnceAsARescuedVersion) {
  ASSERT_TRUE(store_->States().Put(kKey, State("L1", 3, "old"), "", "d-0"));
  RunKept("d-1", State("L1", 4, "new"));
  ASSERT_TRUE(kept_->Settle("acme", "d-1", "d-1"));
  EXPECT_EQ(Newest(), 2);
  EXPECT_EQ(*store_->States().Current(kKey), State("L1", 4, "new"));
  EXPECT_EQ(store_->States().Versions(kKey)->back().run_id, "rescued: errored.tfstate of run d-1");
  auto history = store_->States().History(kKey, 5).value();
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history[0].action, "rescue");
  ASSERT_EQ(Events("d-1").size(), 1u);
  EXPECT_NE(Events("d-1")[0].find("StateRescued: "), std::string::npos) << Events("d-1")[0];
  EXPECT_NE(Events("d-1")[0].find("version 2"), std::string::npos) << Events("d-1")[0];

  // Settled once: neither a second report nor the periodic pass pushes it again.
  ASSERT_TRUE(kept_->Settle("acme", "d-1", "d-1"));
  kept_->SettlePending();
  EXPECT_EQ(Newest(), 2);
  EXPECT_EQ(Events("d-1").size(), 1u);
}

TEST_F(KeptStatesTest, AKeptStateIsThePushedOneWhenTheEnvironmentHasNoneYet) {
  RunKept("d-1", State("L1", 1, "first"));
  ASSERT_TRUE(kept_->Settle("acme", "d-1", "d-1"));
  EXPECT_EQ(*store_->States().Current(kKey), State("L1", 1, "first"));
}

TEST_F(KeptStatesTest, WhatIsNotTheSameStateFurtherOnIsNotPushedAndTheDeploymentSaysWhy) {
  ASSERT_TRUE(store_->States().Put(kKey, State("L1", 5, "now"), "", "d-0"));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {State("L2", 9, "other"), "lineage L2"},
      {State("L1", 5, "same serial"), "moved on"},
      {State("L1", 2, "older"), "moved on"},
      {R"({"serial":9,"lineage":"L1"})", "not a TF state"},
      {"not json at all", "not a TF state"},
      {R"({"meta":{},"encrypted_data":"c2VjcmV0","encryption_version":"v0"})", "encrypted"},
      {deep, "not a TF state"},
  };
  int n = 0;
  for (const auto& [content, why] : cases) {
    std::string id = "d-" + std::to_string(++n);
    RunKept(id, content);
    ASSERT_TRUE(kept_->Settle("acme", id, id)) << why;
    auto events = Events(id);
    ASSERT_EQ(events.size(), 1u) << why;
    EXPECT_NE(events[0].find("StateNotRescued: "), std::string::npos) << events[0];
    EXPECT_NE(events[0].find(why), std::string::npos) << events[0];
    EXPECT_NE(events[0].find("artifacts/state"), std::string::npos) << events[0];
  }
  EXPECT_EQ(Newest(), 1) << "nothing was pushed";
  EXPECT_EQ(*store_->States().Current(kKey), State("L1", 5, "now"));
}

TEST_F(KeptStatesTest, AStateKeptInAStorageBerthdDoesNotWriteIsLeftForAnOperator) {
  UseStorage("s3");
  RunKept("d-1", State("L1", 4, "new"));
  ASSERT_TRUE(kept_->Settle("acme", "d-1", "d-1"));
  EXPECT_EQ(Newest(), 0);
  ASSERT_EQ(Events("d-1").size(), 1u);
  EXPECT_NE(Events("d-1")[0].find("storage is s3"), std::string::npos) << Events("d-1")[0];
}

TEST_F(KeptStatesTest, WhileTheStoreRefusesItIsTriedAgainOnTheNextPassNotBefore) {
  ASSERT_TRUE(store_->States().Put(kKey, State("L1", 3, "old"), "", "d-0"));
  RunKept("d-1", State("L1", 4, "new"));
  RunKept("d-2", State("L1", 9, "still running"), /*ended=*/false);
  // The next run holds the lock: no write gets past it.
  ASSERT_TRUE(store_->States().Lock(kKey, {"l2", R"({"ID":"l2"})", 0, "d-9"}));
  EXPECT_FALSE(kept_->Settle("acme", "d-1", "d-1"));
  kept_->SettlePending();
  EXPECT_EQ(Newest(), 1);
  EXPECT_TRUE(Events("d-1").empty());

  ASSERT_TRUE(store_->States().Unlock(kKey, "l2"));
  kept_->SettlePending();
  EXPECT_EQ(Newest(), 2);
  EXPECT_EQ(*store_->States().Current(kKey), State("L1", 4, "new"));
  EXPECT_TRUE(Events("d-2").empty()) << "a run that has not ended is not settled";
}

}  // namespace
}  // namespace berth::server
