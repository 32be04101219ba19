// berthd's state backend with the real tofu as its client: init, apply and destroy through the
// HTTP backend protocol, every version kept, the lock held during a run and released after,
// refused to a second run while held (tofu names the holder), and tokens of another
// environment, expired, missing or kept past their run's end refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crypto/jws.h"
#include "net/http_client.h"
#include "state_server.h"
#include "store/store.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "tofu_test_env.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr const char* kModule = R"(terraform {
  backend "http" {}
}

variable "greeting" {
  type    = string
  default = "hello"
}

resource "terraform_data" "greeting" {
  input = var.greeting
}

output "greeting" {
  value = terraform_data.greeting.output
}
)";

class StateBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("state-backend");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto server = StateServer::Start(dir_->Path());
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    store_ = &server_->Store();
    url_ = server_->Url() + "/state/v1/acme/web/dev";
    auto tofu = testenv::TofuTestEnv::Shared();
    ASSERT_TRUE(tofu) << tofu.error().ToString();
    tofu_ = *tofu;
    std::filesystem::create_directories(dir_->Path() / "module");
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "module/main.tf", kModule));
  }

  // A token opens the backend only while its run goes on: this one does (one per environment).
  void Dispatch(const std::string& run) {
    auto dispatched = server_->DispatchRun("d-" + run, run);
    ASSERT_TRUE(dispatched) << dispatched.error().ToString();
  }

  std::string Token(const std::string& run, const std::string& scope = "acme/web/dev",
                    int64_t expires = UnixSecondsNow() + 600) {
    return server_->Token(run, scope, expires);
  }

  // tofu in the module folder, the token given as TF_HTTP_PASSWORD (never in a file).
  sys::Completed Tofu(std::vector<std::string> args, const std::string& token) {
    sys::SpawnOptions options;
    options.argv = {tofu_->Tofu().string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.working_dir = (dir_->Path() / "module").string();
    auto env = tofu_->Environment(dir_->Path());
    env.push_back("TF_HTTP_USERNAME=run");
    env.push_back("TF_HTTP_PASSWORD=" + token);
    options.env = env;
    auto done = sys::RunToCompletion(options);
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{-1, ""};
  }

  sys::Completed Init(const std::string& token) {
    return Tofu({"init", "-input=false", "-reconfigure", "-backend-config=address=" + url_,
                 "-backend-config=lock_address=" + url_, "-backend-config=unlock_address=" + url_},
                token);
  }

  std::optional<sys::TempDir> dir_;
  std::unique_ptr<StateServer> server_;
  store::Store* store_ = nullptr;
  std::string url_;
  testenv::TofuTestEnv* tofu_ = nullptr;
};

TEST_F(StateBackendTest, TofuAppliesAndDestroysThroughItAndEveryVersionIsKept) {
  Dispatch("run-1");
  std::string token = Token("run-1");
  auto init = Init(token);
  ASSERT_EQ(init.exit_code, 0) << init.output;
  auto apply = Tofu({"apply", "-auto-approve", "-input=false"}, token);
  ASSERT_EQ(apply.exit_code, 0) << apply.output;
  auto state = store_->States().Current("acme/web/dev");
  ASSERT_TRUE(state);
  EXPECT_NE(state->find("terraform_data"), std::string::npos);
  EXPECT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);

  auto changed = Tofu({"apply", "-auto-approve", "-input=false", "-var=greeting=hi"}, token);
  ASSERT_EQ(changed.exit_code, 0) << changed.output;
  auto output = Tofu({"output", "-raw", "greeting"}, token);
  EXPECT_EQ(output.output, "hi");
  auto destroy = Tofu({"destroy", "-auto-approve", "-input=false"}, token);
  ASSERT_EQ(destroy.exit_code, 0) << destroy.output;

  auto versions = store_->States().Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  ASSERT_GE(versions->size(), 3u);
  for (const auto& v : *versions) EXPECT_EQ(v.run_id, "run-1");
  // The first apply's state is still there to roll back to.
  bool found_hello = false;
  for (const auto& v : *versions) {
    auto content = store_->States().Version("acme/web/dev", v.version);
    if (content && content->find("\"hello\"") != std::string::npos) found_hello = true;
  }
  EXPECT_TRUE(found_hello);
}

TEST_F(StateBackendTest, AHeldLockStopsASecondRunAndNamesItsHolder) {
  Dispatch("run-2");
  std::string token = Token("run-2");
  ASSERT_EQ(Init(token).exit_code, 0);
  ASSERT_TRUE(store_->States().Lock(
      "acme/web/dev",
      {"held-by-run-1",
       R"({"ID":"held-by-run-1","Who":"run-1@berth","Operation":"OperationTypeApply"})", 0}));
  auto apply = Tofu({"apply", "-auto-approve", "-input=false", "-lock-timeout=0s"}, token);
  EXPECT_NE(apply.exit_code, 0);
  EXPECT_NE(apply.output.find("Error acquiring the state lock"), std::string::npos) << apply.output;
  EXPECT_NE(apply.output.find("run-1@berth"), std::string::npos) << apply.output;
  EXPECT_EQ(store_->States().Holder("acme/web/dev")->id, "held-by-run-1");
  EXPECT_EQ(store_->States().Current("acme/web/dev").error().kind, ErrorKind::kNotFound);
}

// tofu's own force-unlock (what the runner's --force-unlock runs) releases a lock its run did
// not take, given the lock's ID; any other ID leaves the lock with its holder.
TEST_F(StateBackendTest, TofusForceUnlockReleasesALockByItsIdAndNoOther) {
  Dispatch("run-3");
  std::string token = Token("run-3");
  ASSERT_EQ(Init(token).exit_code, 0);
  ASSERT_TRUE(store_->States().Lock(
      "acme/web/dev",
      {"held-by-dead-run", R"({"ID":"held-by-dead-run","Who":"run-1@berth"})", 0, "run-1"}));
  auto wrong = Tofu({"force-unlock", "-force", "not-the-lock"}, token);
  EXPECT_NE(wrong.exit_code, 0) << wrong.output;
  EXPECT_EQ(store_->States().Holder("acme/web/dev")->id, "held-by-dead-run");
  auto unlocked = Tofu({"force-unlock", "-force", "held-by-dead-run"}, token);
  ASSERT_EQ(unlocked.exit_code, 0) << unlocked.output;
  EXPECT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(Tofu({"apply", "-auto-approve", "-input=false", "-lock-timeout=0s"}, token).exit_code,
            0);
}

// berthd holds its state's lock for a whole run (the lock's ID is the run's), and the run's tofu
// takes none: its writes, with no lock ID, land under that lock, and once an operator breaks it
// they are refused.
TEST_F(StateBackendTest, ARunsWritesWithoutALockOfTheirOwnLandUnderTheLockBerthdHoldsForIt) {
  Dispatch("run-4");
  std::string token = Token("run-4");
  ASSERT_EQ(Init(token).exit_code, 0);
  ASSERT_TRUE(store_->States().Lock(
      "acme/web/dev", {"run-4", R"({"ID":"run-4","Who":"berthd@run-4"})", 0, "run-4"}));
  auto apply = Tofu({"apply", "-auto-approve", "-input=false", "-lock=false"}, token);
  ASSERT_EQ(apply.exit_code, 0) << apply.output;
  EXPECT_NE(store_->States().Current("acme/web/dev")->find("\"hello\""), std::string::npos);
  EXPECT_EQ(store_->States().Holder("acme/web/dev")->id, "run-4") << "still the run's";

  ASSERT_TRUE(store_->States().Unlock("acme/web/dev", ""));  // an operator breaks it
  auto late =
      Tofu({"apply", "-auto-approve", "-input=false", "-lock=false", "-var=greeting=hi"}, token);
  EXPECT_NE(late.exit_code, 0) << late.output;
  EXPECT_EQ(store_->States().Current("acme/web/dev")->find("\"hi\""), std::string::npos)
      << "the late write did not land";
}

TEST_F(StateBackendTest, RefusesTokensOfAnotherEnvironmentExpiredOrMissing) {
  auto http = net::MakeCurlHttpClient();
  auto get = [&](const std::string& authorization) {
    net::HttpRequest request{.url = url_};
    if (!authorization.empty()) request.headers = {{"Authorization", authorization}};
    auto response = http->Send(request);
    EXPECT_TRUE(response);
    return response ? response->status : 0;
  };
  EXPECT_EQ(get(""), 401);
  EXPECT_EQ(get("Bearer " + Token("run-3", "acme/web/prod")), 403);
  EXPECT_EQ(get("Bearer " + Token("run-3", "acme/web/dev", UnixSecondsNow() - 1)), 401);
  EXPECT_EQ(get("Bearer not-a-token"), 401);
  EXPECT_EQ(get("Bearer " + Token("run-3")), 409) << "no such run";
  Dispatch("run-3");
  EXPECT_EQ(get("Bearer " + Token("run-3")), 204);  // no state yet

  auto other = Init(Token("run-4", "acme/web/prod"));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("invalid auth"), std::string::npos) << other.output;
}

TEST_F(StateBackendTest, ATokenKeptPastItsRunsEndOpensNothing) {
  Dispatch("run-1");
  std::string token = Token("run-1");
  ASSERT_EQ(Init(token).exit_code, 0);
  ASSERT_EQ(Tofu({"apply", "-auto-approve", "-input=false"}, token).exit_code, 0);
  ASSERT_TRUE(server_->EndRun("d-run-1"));
  auto http = net::MakeCurlHttpClient();
  // What a module that copied the token would try once its run is over, on every verb.
  for (const auto& [method, body] :
       std::vector<std::pair<std::string, std::string>>{{"GET", ""},
                                                        {"POST", R"({"version":4})"},
                                                        {"DELETE", ""},
                                                        {"LOCK", R"({"ID":"kept-token"})"},
                                                        {"UNLOCK", R"({"ID":"kept-token"})"}}) {
    auto response = http->Send({.method = method,
                                .url = url_,
                                .headers = {{"Authorization", "Bearer " + token}},
                                .body = body});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 409) << method;
    EXPECT_NE(response->body.find("run run-1 has ended (its deployment is failed)"),
              std::string::npos)
        << method << ": " << response->body;
  }
  auto inputs = http->Send({.url = server_->Url() + "/runs/v1/run-1/inputs",
                            .headers = {{"Authorization", "Bearer " + token}}});
  ASSERT_TRUE(inputs);
  EXPECT_EQ(inputs->status, 409) << "the gateway refuses it too";
  EXPECT_TRUE(store_->States().Current("acme/web/dev")) << "the state is untouched";
  EXPECT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace berth::server
