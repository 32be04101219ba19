// A berthd API in a test, without sockets: SQLite in a temporary folder, organization `acme`
// with a token, project `web`, environment type `development` and environment `web/dev`, and a
// Call that sends a request as that (admin) token; CallAs sends it as another.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "api_without_runners.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {

class ApiFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("api-fixture");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto store = store::OpenStore("sqlite:" + (dir_->Path() / "db").string(), 2);
    ASSERT_TRUE(store);
    store_ = std::move(*store);
    ASSERT_TRUE(store_->CreateOrganization("acme"));
    auto token = IssueToken(*store_, "acme", "test");
    ASSERT_TRUE(token);
    token_ = *token;
    Start(Options());
    ASSERT_EQ(Call("POST", "/orgs/acme/projects", R"({"id":"web"})").status, 201);
    ASSERT_EQ(Call("POST", "/orgs/acme/env-types", R"({"id":"development"})").status, 201);
    ASSERT_EQ(
        Call("POST", "/orgs/acme/projects/web/envs", R"({"id":"dev","env_type_id":"development"})")
            .status,
        201);
  }

  // The API's options for this test (a test may start another API with others).
  virtual ApiOptions Options() { return {}; }
  void Start(const ApiOptions& options) {
    api_ = std::make_unique<ApiWithoutRunners>(*store_, options);
  }

  net::ServerResponse Call(const std::string& method, const std::string& target,
                           const std::string& body = "") {
    return CallAs(token_, method, target, body);
  }
  net::ServerResponse CallAs(const std::string& token, const std::string& method,
                             const std::string& target, const std::string& body = "") {
    net::ServerRequest request{.method = method, .target = target, .body = body};
    request.headers = {{"authorization", "Bearer " + token}};
    if (!body.empty()) request.headers["content-type"] = "application/json";
    return api_->Handle(request);
  }

  std::optional<sys::TempDir> dir_;
  std::unique_ptr<store::Store> store_;
  std::string token_;
  std::unique_ptr<ApiWithoutRunners> api_;
};

}  // namespace berth::server
