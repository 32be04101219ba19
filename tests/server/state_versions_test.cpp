// The state's versions through the API: listed with who wrote them and who holds the lock,
// fetched one by one, and rolled back as a new version (refused while a run holds the lock).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api/api.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {
namespace {

using nlohmann::json;

class StateVersionsApi : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("state-versions");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto store = store::OpenStore("sqlite:" + (dir_->Path() / "db").string(), 2);
    ASSERT_TRUE(store);
    store_ = std::move(*store);
    ASSERT_TRUE(store_->CreateOrganization("acme"));
    auto token = IssueToken(*store_, "acme", "test");
    ASSERT_TRUE(token);
    token_ = *token;
    api_ = std::make_unique<Api>(*store_);
    ASSERT_EQ(Call("POST", "/orgs/acme/projects", R"({"id":"web"})").status, 201);
    ASSERT_EQ(Call("POST", "/orgs/acme/env-types", R"({"id":"development"})").status, 201);
    ASSERT_EQ(
        Call("POST", "/orgs/acme/projects/web/envs", R"({"id":"dev","env_type_id":"development"})")
            .status,
        201);
  }

  net::ServerResponse Call(const std::string& method, const std::string& target,
                           const std::string& body = "") {
    net::ServerRequest request{.method = method, .target = target, .body = body};
    request.headers = {{"authorization", "Bearer " + token_}};
    if (!body.empty()) request.headers["content-type"] = "application/json";
    return api_->Handle(request);
  }

  std::optional<sys::TempDir> dir_;
  std::unique_ptr<store::Store> store_;
  std::string token_;
  std::unique_ptr<Api> api_;
};

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

}  // namespace
}  // namespace berth::server
