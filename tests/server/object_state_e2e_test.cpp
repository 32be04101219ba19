// State kept where teams keep it (issue 46), through a real berthd and real tofu in local runs:
// s3 against moto (tests/env/moto_server.h, the community's S3 and STS emulator). Each
// environment's state is stored, locked, read back and unlocked under a key of its own, with
// credentials the run gets only from its own ID token, never from berthd's environment.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "berthd_process.h"
#include "core/clock.h"
#include "moto_server.h"
#include "net/http_client.h"
#include "server/dispatch/s3_states.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kBucket = "berth-states";
// The role the run's ID token is exchanged for, and the one the backend assumes from it.
constexpr const char* kRunRole = "arn:aws:iam::123456789012:role/deploy";
constexpr const char* kStateRole = "arn:aws:iam::123456789012:role/state-writer";

class ObjectStateE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto moto = testenv::MotoServer::Shared();
    ASSERT_TRUE(moto) << moto.error().ToString();
    auto bucket = (*moto)->CreateBucket(kBucket);
    ASSERT_TRUE(bucket) << bucket.error().ToString();
  }

  void SetUp() override {
    auto moto = testenv::MotoServer::Shared();
    ASSERT_TRUE(moto) << moto.error().ToString();
    moto_ = *moto;
    // The bucket outlives each test's berthd: each keeps its states under a prefix of its own.
    prefix_ =
        std::string("teams/") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    auto dir = sys::TempDir::Create("object-state-e2e");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    berthd_.emplace(dir_->Path(), "data");
    // berthd's own AWS credentials (as on a machine with an instance profile or a profile
    // file): a run must never get them.
    auto started = berthd_->Start(
        {}, {"AWS_ACCESS_KEY_ID=AKIABERTHDSOWNKEY000", "AWS_SECRET_ACCESS_KEY=berthds-own-secret"});
    ASSERT_TRUE(started) << started.error().ToString();
    api_ = {berthd_->Url(), berthd_->AdminToken(), http_.get()};
    const json storage = {
        {"type", "s3"},           {"bucket", kBucket},        {"region", "eu-west-1"},
        {"path_prefix", prefix_}, {"endpoint", moto_->Url()}, {"sts_endpoint", moto_->Url()},
        {"use_path_style", true}, {"role_arn", kStateRole}};
    const json id_token = {{"audience", "sts.amazonaws.com"}, {"aws", {{"role_arn", kRunRole}}}};
    for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
             // moto listens on loopback, which a root berthd's runs reach only when allowed.
             {"/runners",
              {{"id", "s3"},
               {"runner_configuration", {{"type", "local"}, {"network_allow", {"loopback"}}}},
               {"state_storage_configuration", storage}}},
             {"/runner-rules", {{"id", "all"}, {"runner_id", "s3"}}},
             {"/projects", {{"id", "web"}}},
             {"/env-types", {{"id", "development"}}},
             {"/projects/web/envs",
              {{"id", "dev"}, {"env_type_id", "development"}, {"id_token", id_token}}},
             {"/projects/web/envs",
              {{"id", "qa"}, {"env_type_id", "development"}, {"id_token", id_token}}},
             {"/projects/web/envs", {{"id", "anonymous"}, {"env_type_id", "development"}}}}) {
      auto created = api_.Call("POST", path, body.dump());
      ASSERT_EQ(created.status, 201) << path << ": " << created.body;
    }
  }

  void TearDown() override {
    if (berthd_ && berthd_->Running()) EXPECT_EQ(berthd_->Stop(), 0);
  }

  // The environment's objects in the bucket.
  std::vector<std::string> Objects(const std::string& env) const {
    auto keys = moto_->Keys(kBucket, StateKey(env));
    EXPECT_TRUE(keys) << keys.error().ToString();
    return keys ? *keys : std::vector<std::string>{};
  }
  std::string StateKey(const std::string& env) const {
    return prefix_ + "/default/web/" + env + "/terraform.tfstate";
  }
  json Applied(const fs::path& module, json variables, const std::string& env) {
    const std::string id =
        api_.Deploy(module, {{"op", "apply"}, {"variables", std::move(variables)}}, "web/" + env);
    json done = api_.WaitFor(id, {"succeeded", "failed"});
    EXPECT_EQ(done["state"], "succeeded") << done.dump(2) << api_.Log(id);
    return done;
  }

  testenv::MotoServer* moto_ = nullptr;
  std::string prefix_;
  std::optional<sys::TempDir> dir_;
  std::optional<BerthdProcess> berthd_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
  BerthdClient api_;
};

TEST_F(ObjectStateE2e, EachEnvironmentsStateIsStoredLockedReadBackAndUnlockedUnderItsOwnKey) {
  const fs::path slow = testenv::SourceDir() / "examples/slow";
  const std::string id = api_.Deploy(slow, {{"op", "apply"}, {"variables", {{"seconds", 4}}}});
  ASSERT_TRUE(api_.WaitForLog(id, "berth-slow-started")) << api_.Log(id);
  // While it applies, tofu holds the state's lock file (use_lockfile: S3's conditional write).
  EXPECT_EQ(Objects("dev"), (std::vector<std::string>{StateKey("dev") + ".tflock"}));
  json done = api_.WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << api_.Log(id);
  EXPECT_EQ(Objects("dev"), (std::vector<std::string>{StateKey("dev")})) << "the lock is gone";
  auto state = moto_->Object(kBucket, StateKey("dev"));
  ASSERT_TRUE(state) << state.error().ToString();
  EXPECT_NE(state->find("\"terraform_data\""), std::string::npos) << *state;
  const std::string log = api_.Log(id);
  EXPECT_EQ(log.find("AKIABERTHDSOWNKEY000"), std::string::npos);

  // A plan reads it back: nothing to change.
  const std::string plan =
      api_.Deploy(slow, {{"op", "plan"}, {"variables", {{"seconds", 4}}}}, "web/dev");
  json planned = api_.WaitFor(plan, {"succeeded", "failed"});
  ASSERT_EQ(planned["state"], "succeeded") << planned.dump(2) << api_.Log(plan);
  EXPECT_EQ(planned["result"]["run"]["plan"]["hasChanges"], false) << planned.dump(2);

  // Another environment on the same bucket has its own key and leaves this one's alone.
  Applied(testenv::SourceDir() / "examples/hello", {{"name", "qa"}}, "qa");
  EXPECT_EQ(Objects("qa"), (std::vector<std::string>{StateKey("qa")}));
  auto after = moto_->Object(kBucket, StateKey("dev"));
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *state);
  auto qa = moto_->Object(kBucket, StateKey("qa"));
  ASSERT_TRUE(qa);
  EXPECT_EQ(qa->find("berth-slow"), std::string::npos);
}

// A runner killed mid-apply leaves tofu's lock object behind. berthd, with credentials of its own
// (the storage's role assumed with the ID token it signs for the environment), deletes it once
// the run has ended, since its "Who" names the dead run's host; the next deployment runs.
TEST_F(ObjectStateE2e, ALockADeadRunLeftIsDeletedByBerthdAndTheNextDeploymentRuns) {
  const fs::path slow = testenv::SourceDir() / "examples/slow";
  const std::string id = api_.Deploy(slow, {{"op", "apply"}, {"variables", {{"seconds", 60}}}});
  ASSERT_TRUE(api_.WaitForLog(id, "berth-slow-started")) << api_.Log(id);
  ASSERT_EQ(Objects("dev"), (std::vector<std::string>{StateKey("dev") + ".tflock"}));
  auto lock = moto_->Object(kBucket, StateKey("dev") + ".tflock");
  ASSERT_TRUE(lock);
  EXPECT_NE(lock->find("@" + id + "\""), std::string::npos) << "Who names the run: " << *lock;
  auto pid = sys::ReadFile(berthd_->DataDir() / "runs" / id / "pid");
  ASSERT_TRUE(pid);
  ASSERT_EQ(kill(-std::stoi(*pid), SIGKILL), 0);  // the runner and tofu, at once

  json dead = api_.WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(dead["state"], "failed") << dead.dump(2);
  EXPECT_TRUE(Objects("dev").empty()) << "the lock is gone, and no state was written";
  bool said = false;
  for (const json& event : dead["events"])
    said |=
        event["reason"] == "StateLockReleased" &&
        event["message"].get<std::string>().find(StateKey("dev") + ".tflock") != std::string::npos;
  EXPECT_TRUE(said) << dead["events"].dump(2);
  Applied(testenv::SourceDir() / "examples/hello", {{"name", "after"}}, "dev");
  EXPECT_EQ(Objects("dev"), (std::vector<std::string>{StateKey("dev")}));
}

// What berthd reads in a bucket is the module's to write: a lock another run holds, or one that
// is no lock at all, is left alone; a storage without a role is refused, naming it.
TEST_F(ObjectStateE2e, BerthdDeletesOnlyALockItsDeadRunHolds) {
  S3States locks(
      *http_,
      [](const json&, std::chrono::seconds) -> Result<std::string> {
        return std::string("header.claims.signature");  // moto trusts any token
      },
      SystemClock::Instance());
  S3StateStorage s3{.bucket = kBucket,
                    .region = "eu-west-1",
                    .path_prefix = prefix_,
                    .endpoint = moto_->Url(),
                    .sts_endpoint = moto_->Url(),
                    .use_path_style = true,
                    .role_arn = kStateRole};
  StateStorage storage = s3;
  const EnvironmentRef env{"default", "web", "dev"};
  const std::string lock = StateKey("dev") + ".tflock";
  for (const std::string& held : {std::string(R"({"ID":"1","Who":"runner@another-run"})"),
                                  std::string(R"({"ID":"1","Who":"runner@dead-run-not"})"),
                                  std::string("dead-run"), std::string(100000, '[')}) {
    ASSERT_TRUE(moto_->PutObject(kBucket, lock, held));
    auto broken = locks.BreakIfHeldBy(storage, env, "dead-run");
    ASSERT_TRUE(broken) << broken.error().ToString();
    EXPECT_FALSE(*broken) << held.substr(0, 80);
    EXPECT_EQ(moto_->Object(kBucket, lock).value(), held);
  }
  ASSERT_TRUE(moto_->PutObject(kBucket, lock, R"({"ID":"7","Who":"runner@dead-run"})"));
  auto broken = locks.BreakIfHeldBy(storage, env, "dead-run");
  ASSERT_TRUE(broken) << broken.error().ToString();
  ASSERT_TRUE(*broken);
  EXPECT_NE(broken->value().find(lock + " (lock 7)"), std::string::npos) << broken->value();
  EXPECT_EQ(moto_->Object(kBucket, lock).error().kind, ErrorKind::kNotFound);

  s3.role_arn.clear();
  auto refused = locks.BreakIfHeldBy(s3, env, "dead-run");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("role_arn"), std::string::npos);
  EXPECT_FALSE(*locks.BreakIfHeldBy(GcsStateStorage{.bucket = kBucket}, env, "dead-run"))
      << "not its storage";
}

// An operator sees the state where it is (the object, its size, who holds its lock) and breaks
// a lock no run will release, through berthd with berthd's own credentials for the environment:
// the reason stays in berthd's history of the state, and a second unlock finds nothing.
TEST_F(ObjectStateE2e, StateShowAndUnlockReachTheBucketWithBerthdsOwnCredentials) {
  Applied(testenv::SourceDir() / "examples/hello", {{"name", "shown"}}, "dev");
  const std::string state = "/projects/web/envs/dev/state";
  auto shown = api_.Call("GET", state);
  ASSERT_EQ(shown.status, 200) << shown.body;
  json show = json::parse(shown.body);
  EXPECT_EQ(show["storage"], "s3");
  EXPECT_EQ(show["where"], "s3://" + std::string(kBucket) + "/" + StateKey("dev"));
  EXPECT_EQ(show["latest"]["size"], moto_->Object(kBucket, StateKey("dev")).value().size());
  EXPECT_TRUE(show["lock"].is_null());
  EXPECT_EQ(api_.Call("POST", state + "/unlock", R"({"reason":"stuck"})").status, 409);

  const std::string lock = StateKey("dev") + ".tflock";
  ASSERT_TRUE(moto_->PutObject(
      kBucket, lock,
      R"({"ID":"9f1","Operation":"OperationTypeApply","Who":"runner@lost-node","Created":"2026-12-08T00:00:00Z"})"));
  show = json::parse(api_.Call("GET", state).body);
  EXPECT_EQ(show["lock"]["id"], "9f1");
  EXPECT_EQ(show["lock"]["who"], "runner@lost-node");
  EXPECT_EQ(show["lock"]["operation"], "OperationTypeApply");

  auto unlocked = api_.Call("POST", state + "/unlock", R"({"reason":"its node is gone"})");
  ASSERT_EQ(unlocked.status, 200) << unlocked.body;
  EXPECT_EQ(json::parse(unlocked.body)["unlocked"]["id"], "9f1");
  EXPECT_EQ(moto_->Object(kBucket, lock).error().kind, ErrorKind::kNotFound);
  EXPECT_TRUE(moto_->Object(kBucket, StateKey("dev"))) << "the state itself stays";
  auto history = json::parse(api_.Call("GET", state).body)["history"];
  ASSERT_EQ(history.size(), 1u);
  EXPECT_NE(history[0]["detail"].get<std::string>().find("its node is gone"), std::string::npos);
  EXPECT_EQ(api_.Call("POST", state + "/unlock", R"({"reason":"again"})").status, 409);

  // The lock object is a module's to write too (its run holds the bucket's credentials): what
  // is no LockInfo shows only where the lock is, a huge one is cut, and either still unlocks.
  for (const std::string& hostile :
       {std::string("not json"), std::string(100000, '['),
        json{{"ID", 7}, {"Who", std::string(100000, 'w')}, {"Created", json::array()}}.dump()}) {
    ASSERT_TRUE(moto_->PutObject(kBucket, lock, hostile));
    auto seen = api_.Call("GET", state);
    ASSERT_EQ(seen.status, 200) << seen.body.substr(0, 300);
    const json held = json::parse(seen.body)["lock"];
    EXPECT_EQ(held["where"], "s3://" + std::string(kBucket) + "/" + lock);
    EXPECT_EQ(held["id"], "") << hostile.substr(0, 40);
    EXPECT_LE(held["who"].get<std::string>().size(), 1024u);
    EXPECT_FALSE(held.contains("created_at"));
    EXPECT_EQ(api_.Call("POST", state + "/unlock", R"({"reason":"junk"})").status, 200);
    EXPECT_EQ(moto_->Object(kBucket, lock).error().kind, ErrorKind::kNotFound);
  }
  // Its versions are the bucket's: berthd keeps none to list, push or roll back.
  EXPECT_EQ(api_.Call("GET", state + "/versions").status, 409);
}

// berthd's own AWS credentials never reach a run: a run whose environment gives it no ID token
// has nothing to reach its state with, and says so at init.
TEST_F(ObjectStateE2e, ARunWithoutCredentialsOfItsOwnFailsAtInitRatherThanUseBerthds) {
  const std::string id =
      api_.Deploy(testenv::SourceDir() / "examples/hello",
                  {{"op", "apply"}, {"variables", {{"name", "x"}}}}, "web/anonymous");
  json done = api_.WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "failed") << done.dump(2) << api_.Log(id);
  EXPECT_EQ(done["result"]["error"]["kind"], "Init") << done.dump(2);
  EXPECT_NE(api_.Log(id).find("credential"), std::string::npos) << api_.Log(id);
  EXPECT_TRUE(Objects("anonymous").empty());
}

}  // namespace
}  // namespace berth::server
