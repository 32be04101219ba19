// The state's versions through the API: listed with who wrote them and who holds the lock,
// fetched one by one, and rolled back as a new version (refused while a run holds the lock).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "api_fixture.h"

namespace berth::server {
namespace {

using nlohmann::json;

using StateVersionsApi = ApiFixture;

TEST_F(StateVersionsApi, ListsFetchesAndRollsBack) {
  auto& states = store_->States();
  ASSERT_TRUE(states.Put("acme/web/dev", R"({"serial":1})", "", "run-1"));
  ASSERT_TRUE(states.Put("acme/web/dev", R"({"serial":2})", "", "run-2"));
  const std::string base = "/orgs/acme/projects/web/envs/dev/state";

  auto list = Call("GET", base + "/versions");
  ASSERT_EQ(list.status, 200) << list.body;
  auto listed = json::parse(list.body);
  ASSERT_EQ(listed["items"].size(), 2u);
  EXPECT_EQ(listed["items"][0]["run_id"], "run-1");
  EXPECT_FALSE(listed.contains("lock"));

  auto first = Call("GET", base + "/versions/1");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body, R"({"serial":1})");
  EXPECT_EQ(Call("GET", base + "/versions/9").status, 404);
  EXPECT_EQ(Call("GET", base + "/versions/one").status, 400);
  EXPECT_EQ(Call("GET", "/orgs/acme/projects/web/envs/prod/state/versions").status, 404);

  auto rolled = Call("POST", base + "/rollback", R"({"version":1})");
  ASSERT_EQ(rolled.status, 200) << rolled.body;
  EXPECT_EQ(json::parse(rolled.body)["version"], 3);
  EXPECT_EQ(*states.Current("acme/web/dev"), R"({"serial":1})");
  EXPECT_EQ(Call("POST", base + "/rollback", R"({"version":0})").status, 400);

  ASSERT_TRUE(states.Lock("acme/web/dev", {"l1", R"({"ID":"l1","Who":"run-3"})", 0}));
  auto locked = Call("POST", base + "/rollback", R"({"version":2})");
  EXPECT_EQ(locked.status, 409) << locked.body;
  auto with_lock = json::parse(Call("GET", base + "/versions").body);
  EXPECT_EQ(with_lock["lock"]["info"]["Who"], "run-3");
  EXPECT_EQ(*states.Current("acme/web/dev"), R"({"serial":1})");
}

// An operator sees who holds the lock (run, operation, age) and can break it with a reason,
// which stays in the state's history; a blank reason, or a state not locked, is refused.
TEST_F(StateVersionsApi, ShowsTheLockWithItsRunAndBreaksItWithAReasonKeptInTheHistory) {
  auto& states = store_->States();
  const std::string base = "/orgs/acme/projects/web/envs/dev/state";
  auto free = json::parse(Call("GET", base).body);
  EXPECT_EQ(free["versions"], 0);
  EXPECT_TRUE(free["lock"].is_null());
  EXPECT_EQ(Call("POST", base + "/unlock", R"({"reason":"stuck"})").status, 409);

  ASSERT_TRUE(states.Put("acme/web/dev", R"({"serial":1})", "", "run-1"));
  ASSERT_TRUE(states.Lock(
      "acme/web/dev",
      {"l9", R"({"ID":"l9","Operation":"OperationTypeApply","Who":"runner@pod"})", 0, "run-2"}));
  auto shown = Call("GET", base);
  ASSERT_EQ(shown.status, 200) << shown.body;
  auto state = json::parse(shown.body);
  EXPECT_EQ(state["versions"], 1);
  EXPECT_EQ(state["latest"]["run_id"], "run-1");
  EXPECT_EQ(state["lock"]["run_id"], "run-2");
  EXPECT_EQ(state["lock"]["operation"], "OperationTypeApply");
  EXPECT_EQ(state["lock"]["who"], "runner@pod");
  EXPECT_GE(state["lock"]["age_seconds"], 0);

  for (const char* bad : {R"({})", R"({"reason":"  "})", R"({"reason":"x","force":true})"}) {
    auto refused = Call("POST", base + "/unlock", bad);
    EXPECT_EQ(refused.status, 400) << bad << ": " << refused.body;
  }
  EXPECT_TRUE(states.Holder("acme/web/dev")) << "a refused unlock broke nothing";
  auto unlocked = Call("POST", base + "/unlock", R"({"reason":"its node is gone"})");
  ASSERT_EQ(unlocked.status, 200) << unlocked.body;
  EXPECT_EQ(json::parse(unlocked.body)["unlocked"]["id"], "l9");
  EXPECT_EQ(states.Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);

  auto after = json::parse(Call("GET", base).body);
  EXPECT_TRUE(after["lock"].is_null());
  ASSERT_EQ(after["history"].size(), 1u);
  EXPECT_EQ(after["history"][0]["action"], "unlock");
  EXPECT_EQ(after["history"][0]["detail"], "lock l9 of run run-2 broken: its node is gone");
  EXPECT_TRUE(after["history"][0]["actor"].get<std::string>().starts_with("token "));
}

// A state an operator kept (one a run could not persist) goes back as the newest version, with
// the reason in the history; what is not a TF state, a blank reason, and a locked state are
// refused, and nothing is written then.
TEST_F(StateVersionsApi, AKeptStateIsPushedAsTheNewestVersionWithItsReason) {
  auto& states = store_->States();
  const std::string base = "/orgs/acme/projects/web/envs/dev/state";
  ASSERT_TRUE(states.Put("acme/web/dev", R"({"version":4,"serial":1})", "", "run-1"));
  const json kept = {
      {"version", 4}, {"serial", 7}, {"lineage", "l-1"}, {"resources", json::array()}};
  for (const json& bad : {json{{"state", kept}, {"reason", " "}}, json{{"state", kept}},
                          json{{"state", {{"serial", 7}}}, {"reason", "x"}},
                          json{{"state", {{"version", 4}, {"serial", -1}}}, {"reason", "x"}},
                          json{{"state", "not an object"}, {"reason", "x"}}}) {
    auto refused = Call("POST", base + "/versions", bad.dump());
    EXPECT_EQ(refused.status, 400) << bad.dump() << ": " << refused.body;
  }
  ASSERT_TRUE(states.Lock("acme/web/dev", {"l1", R"({"ID":"l1"})", 0, "run-2"}));
  EXPECT_EQ(Call("POST", base + "/versions", json{{"state", kept}, {"reason", "x"}}.dump()).status,
            409);
  ASSERT_TRUE(states.Unlock("acme/web/dev", "l1"));
  EXPECT_EQ(states.Versions("acme/web/dev")->size(), 1u) << "a refused push wrote a version";

  // A whole number written with a fraction is one (JSON Schema's integer), stored as tofu reads it.
  json written = kept;
  written["serial"] = 7.0;
  auto pushed = Call("POST", base + "/versions",
                     json{{"state", written}, {"reason", "apply lost its backend"}}.dump());
  ASSERT_EQ(pushed.status, 201) << pushed.body;
  EXPECT_EQ(json::parse(pushed.body)["version"], 2);
  EXPECT_EQ(json::parse(*states.Current("acme/web/dev")), kept);
  EXPECT_NE(states.Current("acme/web/dev")->find(R"("serial":7,)"), std::string::npos)
      << *states.Current("acme/web/dev");
  auto history = json::parse(Call("GET", base).body)["history"];
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0]["action"], "push");
  EXPECT_EQ(history[0]["detail"], "pushed as version 2: apply lost its backend");
}

// An environment whose runner keeps its state in s3 has no state in berthd: showing an empty
// history, keeping a pushed state no run reads or unlocking nothing would mislead, so each
// route says where the state is instead, and berthd's backend is left as it was.
TEST_F(StateVersionsApi, AnEnvironmentWhoseStateIsElsewhereIsToldWhereNotShownNothing) {
  auto saved = Call("POST", "/orgs/acme/runners",
                    R"({"id":"buckets","runner_configuration":{"type":"local"},)"
                    R"("state_storage_configuration":{"type":"s3","bucket":"states",)"
                    R"("region":"eu-west-1"}})");
  ASSERT_EQ(saved.status, 201) << saved.body;
  auto env = store_->Get(store::Kind::kEnvironment, "acme", "web", "dev");
  ASSERT_TRUE(env);
  env->columns["runner_id"] = "buckets";
  ASSERT_TRUE(store_->Update(*env, env->version));
  const std::string base = "/orgs/acme/projects/web/envs/dev/state";
  const json kept = {{"version", 4}, {"serial", 7}, {"lineage", "l"}, {"resources", json::array()}};
  for (const auto& [method, path, body] :
       {std::tuple{"GET", base, ""}, std::tuple{"GET", base + "/versions", ""},
        std::tuple{"POST", base + "/unlock", R"({"reason":"stuck"})"},
        std::tuple{"POST", base + "/rollback", R"({"version":1})"}}) {
    auto told = Call(method, path, body);
    EXPECT_EQ(told.status, 409) << path << ": " << told.body;
    EXPECT_NE(told.body.find("in the s3 storage of runner buckets"), std::string::npos)
        << told.body;
  }
  auto push = Call("POST", base + "/versions", json{{"state", kept}, {"reason", "x"}}.dump());
  EXPECT_EQ(push.status, 409) << push.body;
  EXPECT_TRUE(store_->States().Versions("acme/web/dev")->empty()) << "a refused push wrote";
}

}  // namespace
}  // namespace berth::server
