// What berthd keeps: ended deployments until --keep-deployments-for (the newest ended one of
// each environment always), with their logs, events and artifacts; bundles while a deployment
// refers to them or they were uploaded within the hour; each environment's state versions by
// its state_retention (the last keep_last, and all younger than keep_younger_than). Nothing a
// deployment that has not ended needs is removed.
#include "server/retention.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api_fixture.h"
#include "core/time_format.h"
#include "store/sql.h"

namespace berth::server {
namespace {

using nlohmann::json;
using std::chrono::hours;

constexpr int64_t kHour = int64_t{3600} * 1000;

class RetentionTest : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    ASSERT_EQ(
        Call("POST", "/orgs/acme/projects/web/envs", R"({"id":"prod","env_type_id":"development"})")
            .status,
        201);
  }

  // A deployment of env from the bundle, ended (or left as it was queued).
  std::string Deployment(const std::string& env, const std::string& bundle, bool ended = true) {
    store::Deployment d{
        .org_id = "acme", .project_id = "web", .env_id = env, .id = "d-" + std::to_string(++made_)};
    d.spec =
        DeploymentSpec::FromRequest({{"op", "apply"}, {"source", {{"bundle", bundle}}}}).value();
    EXPECT_TRUE(store_->Deployments().Create(d));
    EXPECT_TRUE(store_->DeploymentData().AppendLog("acme", d.id, d.id, 1, "a line\n"));
    EXPECT_TRUE(
        store_->DeploymentData().PutArtifact("acme", d.id, {.name = "plan", .run_id = d.id}));
    if (ended) {
      EXPECT_TRUE(store_->Deployments().Transition("acme", d.id, DeploymentState::kQueued,
                                                   DeploymentState::kCancelled, "by the test"));
    }
    return d.id;
  }

  std::string Bundle(const std::string& content) {
    return store_->DeploymentData().PutBundle("acme", content).value().id;
  }

  net::ServerResponse Patch(const std::string& target, const std::string& body) {
    net::ServerRequest request{.method = "PATCH", .target = target, .body = body};
    request.headers = {{"authorization", "Bearer " + token_},
                       {"content-type", "application/merge-patch+json"}};
    return api_->Handle(request);
  }

  bool Exists(const std::string& id) { return store_->Deployments().Get("acme", id).has_value(); }
  bool BundleExists(const std::string& id) {
    return store_->DeploymentData().GetBundle("acme", id).has_value();
  }

  void Prune(int64_t now_ms, std::chrono::milliseconds keep_deployments_for = hours(24)) {
    Retention(*store_, {.ended_deployments_kept_for = keep_deployments_for}, log_,
              SystemClock::Instance())
        .Prune(now_ms);
  }

  std::vector<int64_t> Versions(const std::string& key) {
    std::vector<int64_t> out;
    for (const auto& v : store_->States().Versions(key).value()) out.push_back(v.version);
    return out;
  }

  sys::Logger log_{sys::Logger::Format::kText, 0, -1};
  int made_ = 0;
};

TEST_F(RetentionTest, EndedDeploymentsGoWithTheirLogsAfterTheirTimeButTheNewestOfEachEnvStays) {
  std::string bundle = Bundle("module");
  std::string old_dev = Deployment("dev", bundle), newest_dev = Deployment("dev", bundle);
  std::string only_prod = Deployment("prod", bundle);
  std::string queued = Deployment("dev", bundle, /*ended=*/false);
  const int64_t now = UnixMillisNow();

  Prune(now);  // all younger than a day
  for (const auto& id : {old_dev, newest_dev, only_prod, queued}) EXPECT_TRUE(Exists(id)) << id;

  Prune(now + 25 * kHour);
  EXPECT_FALSE(Exists(old_dev));
  EXPECT_TRUE(store_->DeploymentData().ReadLog("acme", old_dev, 0, 10)->empty());
  EXPECT_FALSE(store_->DeploymentData().GetArtifact("acme", old_dev, "plan"));
  EXPECT_TRUE(Exists(newest_dev)) << "the newest ended deployment of dev stays";
  EXPECT_TRUE(Exists(only_prod));
  EXPECT_TRUE(Exists(queued)) << "a deployment that has not ended is never pruned";
  EXPECT_EQ(store_->DeploymentData().ReadLog("acme", newest_dev, 0, 10)->size(), 1u);
}

TEST_F(RetentionTest, SettledAgentCommandsGoWithTheDeploymentsButWaitingOnesStay) {
  const int64_t now = UnixMillisNow();
  auto command = [&](const std::string& run) {
    return store_->Agents()
        .Enqueue({.org_id = "acme",
                  .runner_id = "agent",
                  .kind = "create-job",
                  .run_id = run,
                  .created_at = now,
                  .expires_at = now + 100 * kHour})
        .value();
  };
  auto done = command("done-run");
  command("waiting-run");
  auto leased = store_->Agents().Lease("acme", "agent", "a", "receipt", now, now + kHour);
  ASSERT_TRUE(leased && *leased);
  ASSERT_TRUE(store_->Agents().Ack("acme", "agent", done.seq, "receipt"));
  ASSERT_TRUE(store_->Agents().RecordPoll({"acme", "agent", "gone-agent", "0.1", now}));

  Prune(now + 25 * kHour);
  auto left = store_->Agents().List("acme", "agent", "", 10).value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.front().run_id, "waiting-run") << "a command still queued is never pruned";
  EXPECT_TRUE(store_->Agents().Agents("acme", "agent")->empty());
}

TEST_F(RetentionTest, ABundleGoesWhenNoDeploymentRefersToItAndItWasNotUploadedWithinTheHour) {
  std::string used = Bundle("used"), unused = Bundle("unused"), again = Bundle("again");
  Deployment("dev", used, /*ended=*/false);
  const int64_t now = UnixMillisNow();

  Prune(now);
  EXPECT_TRUE(BundleExists(unused)) << "uploaded within the hour: its deployment may come";
  Prune(now + 2 * kHour);
  EXPECT_FALSE(BundleExists(unused));
  EXPECT_TRUE(BundleExists(used)) << "a queued deployment runs it";
  EXPECT_FALSE(BundleExists(again));

  // Uploaded again: young again, whatever its first upload's age.
  EXPECT_EQ(Bundle("again"), again);
  Prune(UnixMillisNow() + kHour / 2);
  EXPECT_TRUE(BundleExists(again));
}

TEST_F(RetentionTest, ADeploymentFromBeforeBundlesWereRecordedKeepsEveryBundleUntilItEnds) {
  std::string unused = Bundle("unused");
  std::string legacy = Deployment("dev", Bundle("legacy"), /*ended=*/false);
  auto db = store::OpenSqlite((dir_->Path() / "db").string());
  ASSERT_TRUE(db);
  ASSERT_TRUE((*db)->Execute("UPDATE deployments SET bundle_id = NULL WHERE id = $1", {legacy}));
  Prune(UnixMillisNow() + 2 * kHour);
  EXPECT_TRUE(BundleExists(unused)) << "which bundle the legacy deployment runs is not known";

  ASSERT_TRUE(store_->Deployments().Transition("acme", legacy, DeploymentState::kQueued,
                                               DeploymentState::kCancelled, "by the test"));
  Prune(UnixMillisNow() + 2 * kHour);
  EXPECT_FALSE(BundleExists(unused));
}

TEST_F(RetentionTest, StateVersionsBeyondTheEnvironmentsRetentionGoTheNewestStay) {
  auto set = Patch("/orgs/acme/projects/web/envs/prod",
                   R"({"state_retention":{"keep_last":2,"keep_younger_than":"1h"}})");
  ASSERT_EQ(set.status, 200) << set.body;
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(store_->States().Put("acme/web/prod", R"({"serial":)" + std::to_string(i) + "}", "",
                                     "run"));
  }
  for (int i = 1; i <= 102; ++i) {
    ASSERT_TRUE(
        store_->States().Put("acme/web/dev", R"({"serial":)" + std::to_string(i) + "}", "", "run"));
  }
  const int64_t now = UnixMillisNow();
  Prune(now);
  EXPECT_EQ(Versions("acme/web/prod").size(), 5u) << "all younger than an hour";
  Prune(now + 2 * kHour);
  EXPECT_EQ(Versions("acme/web/prod"), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(*store_->States().Current("acme/web/prod"), R"({"serial":5})");
  EXPECT_EQ(Versions("acme/web/dev").size(), 102u) << "the default keeps 720h";
  Prune(now + 721 * kHour);
  auto dev = Versions("acme/web/dev");
  ASSERT_EQ(dev.size(), 100u) << "the default keeps the last 100";
  EXPECT_EQ(dev.front(), 3);
  EXPECT_EQ(dev.back(), 102);
}

TEST_F(RetentionTest, StateRetentionIsCheckedWhenSavedAndShownWithItsDefaults) {
  auto shown = json::parse(Call("GET", "/orgs/acme/projects/web/envs/dev").body);
  EXPECT_EQ(shown["state_retention"], (json{{"keep_last", 100}, {"keep_younger_than", "720h"}}));
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"state_retention":{"keep_last":0}})", "$.state_retention.keep_last"},
      {R"({"state_retention":{"keep_last":2.5}})", "$.state_retention.keep_last"},
      {R"({"state_retention":{"keep_younger_than":"forever"}})",
       "$.state_retention.keep_younger_than"},
      {R"({"state_retention":{"keep":3}})", "$.state_retention.keep"},
      {R"({"state_retention":"all"})", "$.state_retention"},
  };
  for (const auto& [body, field] : refused) {
    auto r = Patch("/orgs/acme/projects/web/envs/dev", body);
    EXPECT_EQ(r.status, 400) << body << ": " << r.body;
    EXPECT_NE(r.body.find(field), std::string::npos) << body << ": " << r.body;
  }
  auto kept = Patch("/orgs/acme/projects/web/envs/dev", R"({"state_retention":{"keep_last":7}})");
  ASSERT_EQ(kept.status, 200) << kept.body;
  EXPECT_EQ(json::parse(kept.body)["state_retention"],
            (json{{"keep_last", 7}, {"keep_younger_than", "720h"}}));
}

}  // namespace
}  // namespace berth::server
