// berthd as users run it (the real berthd process, local runners, the real runner and tofu),
// through its HTTP API: approval of an exact plan, a queue behind a running deployment, cancel,
// a berthd killed with SIGKILL in the middle of an apply and started again, a runner that dies,
// and a run past its deadline.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "berthd_process.h"
#include "core/base64.h"
#include "net/http_client.h"
#include "sys/fd.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "tar_builder.h"
#include "test_tools.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BerthdE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("berthd-e2e");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    berthd_.emplace(dir_->Path(), "data");
    data_ = berthd_->DataDir();
    url_ = berthd_->Url();
    StartBerthd();
    if (HasFatalFailure()) return;
    token_ = AdminToken();
    for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
             {"/runners", R"({"id":"here","runner_configuration":{"type":"local"},)"
                          R"("state_storage_configuration":{"type":"berth"}})"},
             {"/runner-rules", R"({"id":"all","runner_id":"here"})"},
             {"/projects", R"({"id":"web"})"},
             {"/env-types", R"({"id":"development"})"},
             {"/projects/web/envs", R"({"id":"dev","env_type_id":"development"})"}}) {
      auto created = Call("POST", path, body);
      ASSERT_EQ(created.status, 201) << path << ": " << created.body;
    }
  }

  void TearDown() override {
    if (berthd_->Running()) StopBerthd();
  }

  void StartBerthd() {
    auto started = berthd_->Start(berthd_flags_);
    ASSERT_TRUE(started) << started.error().ToString();
  }
  std::string AdminToken() const { return berthd_->AdminToken(); }
  void StopBerthd() { EXPECT_EQ(berthd_->Stop(), 0); }
  void KillBerthd() { berthd_->Kill(); }

  BerthdClient Api() const { return {url_, token_, http_.get()}; }
  net::HttpResponse Call(const std::string& method, const std::string& path,
                         const std::string& body = "",
                         const std::string& type = "application/json") {
    return Api().Call(method, path, body, type);
  }
  std::string Deploy(const fs::path& module, json spec) {
    return Api().Deploy(module, std::move(spec));
  }
  json Get(const std::string& id) { return Api().Get(id); }
  json WaitFor(const std::string& id, const std::vector<std::string>& states) {
    return Api().WaitFor(id, states);
  }
  std::string Log(const std::string& id) { return Api().Log(id); }
  void WaitForLog(const std::string& id, const std::string& text) {
    ASSERT_TRUE(Api().WaitForLog(id, text)) << Log(id);
  }

  fs::path Hello() const { return testenv::SourceDir() / "examples/hello"; }
  fs::path Slow() const { return testenv::SourceDir() / "examples/slow"; }
  // How often the slow module's apply ran in a deployment, by what its local-exec printed (a
  // file it could write outside its sandbox would be a hole in the sandbox).
  int Applies(const std::string& id) {
    std::string log = Log(id);
    int n = 0;
    for (size_t at = 0;
         (at = log.find("(local-exec): berth-slow-started", at)) != std::string::npos; ++at)
      ++n;
    return n;
  }

  std::optional<sys::TempDir> dir_;
  fs::path data_;
  std::string url_, token_;
  std::vector<std::string> berthd_flags_;
  std::optional<BerthdProcess> berthd_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
};

TEST_F(BerthdE2e, AnApprovedPlanIsAppliedExactlyAndNoOtherHashOrStalePlanIs) {
  std::string id = Deploy(
      Hello(),
      {{"op", "apply"}, {"variables", {{"name", "e2e"}}}, {"approval", {{"required", true}}}});
  json waiting = WaitFor(id, {"waiting_approval", "failed"});
  ASSERT_EQ(waiting["state"], "waiting_approval") << waiting.dump(2);
  EXPECT_EQ(waiting["variables"], json::array({"name"}));  // names, never values
  std::string hash = waiting["plan"]["hash"];
  EXPECT_EQ(waiting["plan"]["add"], 1);
  EXPECT_EQ(Call("GET", "/deployments/" + id + "/outputs").status, 404);  // nothing applied
  auto plan_file = Call("GET", "/deployments/" + id + "/artifacts/plan");
  ASSERT_EQ(plan_file.status, 200);
  EXPECT_TRUE(plan_file.body.starts_with("PK")) << "a plan file is a zip archive";
  EXPECT_EQ(plan_file.headers["x-berth-run"], id);
  EXPECT_EQ(Call("GET", "/deployments/" + id + "/artifacts/result").status, 400);

  std::string other = "sha256:" + std::string(64, '0');
  auto refused = Call("POST", "/deployments/" + id + "/approve", json{{"plan_hash", other}}.dump());
  EXPECT_EQ(refused.status, 409) << refused.body;
  auto approved = Call("POST", "/deployments/" + id + "/approve", json{{"plan_hash", hash}}.dump());
  ASSERT_EQ(approved.status, 202) << approved.body;
  json done = WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Log(id);
  EXPECT_EQ(done["result"]["approved_plan"]["hash"], hash);
  // The apply ran exactly the approved file's bytes, without reading the plan again, in the
  // plan run's work folder without a second init, and its plain outputs came with its own
  // events (no output -json).
  std::vector<std::string> steps;
  for (const auto& step : done["result"]["run"]["steps"]) steps.push_back(step["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"apply"})) << done.dump(2);
  EXPECT_EQ(done["binary"]["name"], "tofu") << done.dump(2);
  EXPECT_FALSE(done["binary"]["version"].get<std::string>().empty()) << done.dump(2);
  auto outputs = json::parse(Call("GET", "/deployments/" + id + "/outputs").body);
  EXPECT_EQ(outputs["outputs"]["greeting"]["value"], "hello, e2e");
  std::string log = Log(id);
  EXPECT_LT(log.find("[plan] plan " + hash), log.find("[apply] Apply complete")) << log;
  auto versions = json::parse(Call("GET", "/projects/web/envs/dev/state/versions").body);
  EXPECT_EQ(versions["items"].back()["run_id"], id + "-apply") << versions.dump();

  // A plan whose state moves before it is approved is stale.
  std::string second = Deploy(
      Hello(),
      {{"op", "apply"}, {"variables", {{"name", "later"}}}, {"approval", {{"required", true}}}});
  json plan = WaitFor(second, {"waiting_approval", "failed"})["plan"];
  int64_t newest = versions["items"].back()["version"];
  ASSERT_EQ(Call("POST", "/projects/web/envs/dev/state/rollback", json{{"version", newest}}.dump())
                .status,
            200);
  auto stale =
      Call("POST", "/deployments/" + second + "/approve", json{{"plan_hash", plan["hash"]}}.dump());
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_NE(stale.body.find("stale"), std::string::npos) << stale.body;
  EXPECT_EQ(Call("POST", "/deployments/" + second + "/cancel").status, 200);
  EXPECT_EQ(Get(second)["state"], "cancelled");

  // A destroy that needs approval shows what it deletes first.
  std::string destroy = Deploy(Hello(), {{"op", "destroy"}, {"approval", {{"required", true}}}});
  json doomed = WaitFor(destroy, {"waiting_approval", "failed"});
  ASSERT_EQ(doomed["state"], "waiting_approval") << doomed.dump(2) << Log(destroy);
  EXPECT_EQ(doomed["plan"]["destroy"], 1);
  auto go = Call("POST", "/deployments/" + destroy + "/approve",
                 json{{"plan_hash", doomed["plan"]["hash"]}}.dump());
  ASSERT_EQ(go.status, 202) << go.body;
  json destroyed = WaitFor(destroy, {"succeeded", "failed"});
  ASSERT_EQ(destroyed["state"], "succeeded") << destroyed.dump(2) << Log(destroy);
  EXPECT_EQ(destroyed["result"]["run"]["op"], "destroy");
  auto last = Call("GET", "/projects/web/envs/dev/state/versions");
  int64_t final_version = json::parse(last.body)["items"].back()["version"];
  auto state =
      Call("GET", "/projects/web/envs/dev/state/versions/" + std::to_string(final_version));
  EXPECT_TRUE(json::parse(state.body)["resources"].empty()) << state.body;
}

// /metrics as Prometheus reads it: the exposition goes through prometheus_client's own parser.
// Secrets at rest: after a real apply with a secret variable, a sensitive output and a state
// holding both, neither the database file nor its write-ahead log holds the secret.
// `berthd rotate-keys` seals everything with a new key and drops the old one, and berthd
// started again reads all of it.
// A plan waiting for approval holds its environment's queue: the deployments behind it say so,
// and the environment's approval_timeout cancels a plan nobody approved.
TEST_F(BerthdE2e, AForgottenPlanIsCancelledAtItsApprovalTimeoutAndTheQueueSaysWhatItWaitsFor) {
  auto refused = Call("PATCH", "/projects/web/envs/dev", R"({"approval_timeout":"two days"})",
                      "application/merge-patch+json");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("approval_timeout"), std::string::npos) << refused.body;
  auto set = Call("PATCH", "/projects/web/envs/dev", R"({"approval_timeout":"3s"})",
                  "application/merge-patch+json");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(json::parse(set.body)["approval_timeout"], "3s");

  std::string forgotten = Deploy(Hello(), {{"op", "apply"}, {"approval", {{"required", true}}}});
  ASSERT_EQ(WaitFor(forgotten, {"waiting_approval", "failed"})["state"], "waiting_approval");
  std::string behind = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "next"}}}});
  json queued = Get(behind);
  EXPECT_EQ(queued["state"], "queued");
  EXPECT_EQ(queued["waiting_for"], (json{{"id", forgotten}, {"state", "waiting_approval"}}))
      << queued.dump(2);

  json cancelled = WaitFor(forgotten, {"cancelled", "succeeded", "failed"});
  ASSERT_EQ(cancelled["state"], "cancelled") << cancelled.dump(2);
  EXPECT_NE(cancelled["transitions"].back().value("reason", "").find("approval_timeout"),
            std::string::npos)
      << cancelled.dump(2);
  EXPECT_EQ(WaitFor(behind, {"succeeded", "failed"})["state"], "succeeded") << Log(behind);
}

// --keep-deployments-for acts from the first pass after a start: an ended deployment past it
// is gone with its log, the newest of its environment stays; a duration that is none is
// refused at start, naming the flag.
TEST_F(BerthdE2e, EndedDeploymentsArePrunedAfterKeepDeploymentsForButTheNewestStays) {
  std::string older = Deploy(Hello(), {{"op", "apply"}});
  ASSERT_EQ(WaitFor(older, {"succeeded", "failed"})["state"], "succeeded") << Log(older);
  std::string newest = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "again"}}}});
  ASSERT_EQ(WaitFor(newest, {"succeeded", "failed"})["state"], "succeeded") << Log(newest);
  StopBerthd();

  berthd_flags_ = {"--keep-deployments-for=0s"};
  EXPECT_FALSE(berthd_->Start(berthd_flags_)) << "a retention of nothing was taken";
  auto refused = sys::ReadFile(berthd_->LogPath(berthd_->Starts()));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("--keep-deployments-for"), std::string::npos) << *refused;

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  berthd_flags_ = {"--keep-deployments-for=1s"};
  StartBerthd();
  if (HasFatalFailure()) return;
  int status = 0;
  for (int i = 0; i < 100 && status != 404; ++i) {
    status = Call("GET", "/deployments/" + older).status;
    if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 404) << "the older deployment outlived --keep-deployments-for";
  EXPECT_EQ(Call("GET", "/deployments/" + older + "/logs").status, 404);
  EXPECT_EQ(Get(newest)["state"], "succeeded") << "the newest of the environment stays";
  EXPECT_NE(Log(newest).find("Apply complete!"), std::string::npos);
}

// state_encryption: berth. OpenTofu encrypts the environment's state and plans with a key
// berth keeps for it: berth's backend and the plan artifact hold only ciphertext, the plan is
// still approved by its effect, the outputs are read, a plaintext state from before is taken
// over (and encrypted at the next write), and the setting cannot go back to none.
TEST_F(BerthdE2e, AnEncryptedEnvironmentsStateAndPlansReachBerthOnlyAsCiphertext) {
  std::string plain = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "in-clear"}}}});
  ASSERT_EQ(WaitFor(plain, {"succeeded", "failed"})["state"], "succeeded") << Log(plain);
  auto refused = Call("PATCH", "/projects/web/envs/dev", R"({"state_encryption":"aes"})",
                      "application/merge-patch+json");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("state_encryption"), std::string::npos) << refused.body;
  auto set = Call("PATCH", "/projects/web/envs/dev", R"({"state_encryption":"berth"})",
                  "application/merge-patch+json");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(json::parse(set.body)["state_encryption"], "berth");

  std::string id = Deploy(Hello(), {{"op", "apply"},
                                    {"variables", {{"name", "under-cipher"}}},
                                    {"approval", {{"required", true}}}});
  json waiting = WaitFor(id, {"waiting_approval", "failed"});
  ASSERT_EQ(waiting["state"], "waiting_approval") << waiting.dump(2) << Log(id);
  EXPECT_EQ(waiting["plan"]["change"], 1) << waiting.dump(2);  // read the plaintext state
  std::vector<std::string> plan_steps;
  for (const auto& step : waiting["result"]["plan_run"]["run"]["steps"])
    plan_steps.push_back(step["name"]);
  // The runner opened the encrypted plan file itself: no show -json.
  EXPECT_EQ(plan_steps, (std::vector<std::string>{"init", "plan"})) << waiting.dump(2);
  auto plan_file = Call("GET", "/deployments/" + id + "/artifacts/plan");
  ASSERT_EQ(plan_file.status, 200);
  EXPECT_EQ(plan_file.body.find("under-cipher"), std::string::npos) << "a plan in clear";
  auto approved = Call("POST", "/deployments/" + id + "/approve",
                       json{{"plan_hash", waiting["plan"]["hash"]}}.dump());
  ASSERT_EQ(approved.status, 202) << approved.body;
  ASSERT_EQ(WaitFor(id, {"succeeded", "failed"})["state"], "succeeded") << Log(id);
  auto outputs = json::parse(Call("GET", "/deployments/" + id + "/outputs").body);
  EXPECT_EQ(outputs["outputs"]["greeting"]["value"], "hello, under-cipher");
  auto versions = json::parse(Call("GET", "/projects/web/envs/dev/state/versions").body);
  std::string newest = std::to_string(versions["items"].back()["version"].get<int64_t>());
  auto state = Call("GET", "/projects/web/envs/dev/state/versions/" + newest);
  ASSERT_EQ(state.status, 200);
  EXPECT_NE(state.body.find("encrypted_data"), std::string::npos) << state.body;
  EXPECT_EQ(state.body.find("under-cipher"), std::string::npos) << state.body;

  // The next run reads the encrypted state: the same inputs change nothing.
  std::string again = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "under-cipher"}}}});
  ASSERT_EQ(WaitFor(again, {"succeeded", "failed"})["state"], "succeeded") << Log(again);
  EXPECT_NE(Log(again).find("No changes"), std::string::npos) << Log(again);
  auto back = Call("PATCH", "/projects/web/envs/dev", R"({"state_encryption":"none"})",
                   "application/merge-patch+json");
  EXPECT_EQ(back.status, 400) << back.body;
  EXPECT_NE(back.body.find("$.state_encryption"), std::string::npos) << back.body;
}

TEST_F(BerthdE2e, TheDatabaseFileHoldsNoSecretAndRotateKeysKeepsItAllReadable) {
  const std::string secret = "tok-at-rest-81f3c2";
  std::string id = Deploy(testenv::SourceDir() / "examples/secret",
                          {{"op", "apply"}, {"variables", {{"token", secret}}}});
  json done = WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2);
  auto database_holds_secret = [&] {
    std::string bytes;
    for (const char* file : {"berth.db", "berth.db-wal"}) {
      if (auto content = sys::ReadFile(data_ / file)) bytes += *content;
    }
    EXPECT_GT(bytes.size(), 0u);
    return bytes.find(secret) != std::string::npos;
  };
  auto readable = [&] {
    auto outputs = Call("GET", "/deployments/" + id + "/outputs?sensitive=true");
    EXPECT_EQ(json::parse(outputs.body)["outputs"]["token"]["value"], secret) << outputs.body;
    auto state = Call("GET", "/projects/web/envs/dev/state/versions/1");
    EXPECT_NE(state.body.find(secret), std::string::npos) << state.body;
  };
  readable();
  EXPECT_FALSE(database_holds_secret());

  StopBerthd();
  auto keys_before = *sys::ReadFile(data_ / "encryption-keys");
  sys::SpawnOptions rotate;
  rotate.argv = {BERTHD_BIN, "rotate-keys", "--data-dir=" + data_.string()};
  auto rotated = sys::RunToCompletion(rotate);
  ASSERT_TRUE(rotated);
  ASSERT_EQ(rotated->exit_code, 0) << rotated->output;
  EXPECT_NE(rotated->output.find("sealed "), std::string::npos) << rotated->output;
  auto keys_after = *sys::ReadFile(data_ / "encryption-keys");
  std::string old_key = keys_before.substr(keys_before.rfind('\n', keys_before.size() - 2) + 1);
  old_key = old_key.substr(0, old_key.find(' '));
  EXPECT_EQ(keys_after.find(old_key), std::string::npos) << keys_after;
  StartBerthd();
  readable();
  EXPECT_FALSE(database_holds_secret());
}

// A hostile bundle sent straight to the API (no `berth deploy` would pack it): a link to its
// own folder, then a file whose path climbs out through it. The runner refuses the archive;
// the deployment fails saying why, and nothing was written outside the run's folder.
TEST_F(BerthdE2e, ABundleThatClimbsOutThroughASymlinkChainIsRefused) {
  std::string bundle = berth::testing::TarBuilder()
                           .File("main.tf", "")
                           .Symlink("s", ".")
                           .File("s/s/s/../../../escaped-by-bundle", "x")
                           .TarGz();
  auto uploaded = Call("POST", "/bundles", bundle, "application/gzip");
  ASSERT_EQ(uploaded.status, 201) << uploaded.body;
  json spec = {{"op", "apply"}, {"source", {{"bundle", json::parse(uploaded.body)["id"]}}}};
  auto created = Call("POST", "/projects/web/envs/dev/deployments", spec.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  std::string id = json::parse(created.body)["id"];
  json done = WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "failed") << done.dump(2);
  std::string error = done["result"]["error"].dump();
  EXPECT_TRUE(error.find("below a symbolic link") != std::string::npos ||
              error.find("\\\"..\\\"") != std::string::npos)
      << error;
  for (const auto& entry : fs::recursive_directory_iterator(dir_->Path()))
    EXPECT_NE(entry.path().filename(), "escaped-by-bundle") << entry.path();
}

// A stranger announces a 60 MiB state or bundle and sends only its headers: berthd answers 401
// at once and closes, without waiting for (or holding) a byte of the body. A caller with a valid
// token is given the route's limit and sends the body as usual; a small body is read first.
TEST_F(BerthdE2e, AStrangersLargeBodyIsRefusedBeforeABodyByteIsRead) {
  const int port = std::stoi(url_.substr(url_.rfind(':') + 1));
  // What berthd answers to request, read until it closes (or a 30 s guard gives up).
  auto exchange = [port](const std::string& request) {
    sys::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd.Get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << errno;
    timeval wait{.tv_sec = 30, .tv_usec = 0};
    setsockopt(fd.Get(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    EXPECT_EQ(send(fd.Get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string got;
    std::array<char, 4096> buffer{};
    for (ssize_t n; (n = recv(fd.Get(), buffer.data(), buffer.size(), 0)) > 0;)
      got.append(buffer.data(), static_cast<size_t>(n));
    return got;
  };
  // Headers alone, announcing 60 MiB.
  auto answer_to_headers = [&](const std::string& head) {
    return exchange(head + "Host: berthd\r\nContent-Length: 62914560\r\n\r\n");
  };
  for (const std::string& head :
       {std::string("PUT /state/v1/default/web/dev HTTP/1.1\r\n"),
        std::string("POST /state/v1/default/web/dev HTTP/1.1\r\nAuthorization: Bearer forged\r\n"),
        std::string("PUT /runs/v1/r1/artifacts/plan HTTP/1.1\r\n"),
        std::string("POST /orgs/default/bundles HTTP/1.1\r\n"),
        std::string("POST /orgs/default/bundles HTTP/1.1\r\nAuthorization: Bearer tok-forged\r\n"),
        std::string("POST /orgs/default/projects/web/envs/dev/state/versions HTTP/1.1\r\n"
                    "Cookie: berth_session=forged\r\n"),
        std::string("POST /agents/v1/orgs/default/runners/local/runs/r1/events HTTP/1.1\r\n"
                    "Authorization: Bearer forged\r\n"),
        std::string("POST /agents/v1/orgs/default HTTP/1.1\r\n")}) {
    SCOPED_TRACE(head);
    std::string answer = answer_to_headers(head);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 401")) << answer;
    EXPECT_NE(answer.find("the body was not read"), std::string::npos) << answer;
  }
  // No other surface takes a large body, with or without a credential.
  for (const std::string& head :
       {std::string("POST /ui/login HTTP/1.1\r\n"),
        std::string("POST /nowhere HTTP/1.1\r\nAuthorization: Bearer " + token_ + "\r\n")}) {
    SCOPED_TRACE(head);
    std::string answer = answer_to_headers(head);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
    EXPECT_NE(answer.find("the body was not read"), std::string::npos) << answer;
  }
  // With the admin token, a 100 KiB body is admitted and read: the handler answers it. A body
  // up to 64 KiB is read before its token is checked, and then refused by the handler.
  auto answer_to_body = [&](const std::string& token, size_t bytes) {
    return exchange(
        "POST /orgs/default/bundles HTTP/1.1\r\nHost: berthd\r\n"
        "Connection: close\r\nContent-Type: application/gzip\r\n"
        "Authorization: Bearer " +
        token + "\r\nContent-Length: " + std::to_string(bytes) + "\r\n\r\n" +
        std::string(bytes, 'x'));
  };
  std::string admitted = answer_to_body(token_, 100 << 10);
  EXPECT_FALSE(admitted.starts_with("HTTP/1.1 401")) << admitted;
  EXPECT_EQ(admitted.find("the body was not read"), std::string::npos) << admitted;
  std::string small = answer_to_body("tok-forged", 10);
  EXPECT_TRUE(small.starts_with("HTTP/1.1 401")) << small;
  EXPECT_EQ(small.find("the body was not read"), std::string::npos) << small;
  EXPECT_EQ(Call("GET", "/projects").status, 200);  // and berthd goes on
}

// A lost or leaked admin token: --reset-admin-token revokes the one in the data folder and
// writes a new one; the organization's other tokens are untouched.
TEST_F(BerthdE2e, AResetAdminTokenRevokesTheOldOneAndKeepsTheOthers) {
  const std::string old = token_;
  auto made = Call("POST", "/tokens", R"({"scopes":["read"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string reader = json::parse(made.body)["secret"];
  StopBerthd();
  berthd_flags_ = {"--reset-admin-token"};
  StartBerthd();
  token_ = AdminToken();
  EXPECT_NE(token_, old);
  EXPECT_EQ(Call("GET", "/tokens").status, 200);
  token_ = old;
  EXPECT_EQ(Call("GET", "/projects").status, 401);
  token_ = reader;
  EXPECT_EQ(Call("GET", "/projects").status, 200);
}

// An operator-kept admin token (a mounted Secret): each start makes the admin token exactly
// the file's secret, so that a changed file and a restart rotate it; a weak one is refused.
TEST_F(BerthdE2e, AnAdminTokenFileIsTheAdminTokenAndRotatesOnRestart) {
  fs::path file = data_ / "mounted-admin-token";
  const std::string kept(40, 'k'), rotated(48, 'r');
  ASSERT_TRUE(sys::WriteFileAtomic(file, kept + "\n"));
  StopBerthd();
  berthd_flags_ = {"--admin-token-file=" + file.string()};
  StartBerthd();
  EXPECT_EQ(Call("GET", "/projects").status, 401) << "the token berthd made is no longer admin";
  token_ = kept;
  EXPECT_EQ(Call("GET", "/tokens").status, 200);

  StopBerthd();
  ASSERT_TRUE(sys::WriteFileAtomic(file, rotated));
  StartBerthd();
  EXPECT_EQ(Call("GET", "/projects").status, 401);
  token_ = rotated;
  EXPECT_EQ(Call("GET", "/tokens").status, 200);

  StopBerthd();
  for (const std::string& weak : {std::string("short"), std::string(40, ' ')}) {
    ASSERT_TRUE(sys::WriteFileAtomic(file, weak));
    auto refused = berthd_->Start(berthd_flags_);
    ASSERT_FALSE(refused) << "a weak admin token was taken: '" << weak << "'";
    EXPECT_NE(refused.error().ToString().find("--admin-token-file"), std::string::npos)
        << refused.error().ToString();
  }
  berthd_flags_ = {"--admin-token-file=" + file.string(), "--reset-admin-token"};
  EXPECT_FALSE(berthd_->Start(berthd_flags_)) << "both ways to set the admin token at once";
  berthd_flags_ = {};
  ASSERT_TRUE(sys::WriteFileAtomic(file, rotated));
}

// A secret of berthd's inside a folder every local run is shown (here a provider mirror its TF
// CLI configuration names) would be a secret every module reads: berthd does not start, and
// says which file and which folder.
TEST_F(BerthdE2e, ASecretEveryLocalRunWouldSeeKeepsBerthdFromStarting) {
  StopBerthd();
  const fs::path mirror = dir_->Path() / "mirror";
  fs::create_directories(mirror);
  const fs::path token = mirror / "admin-token";
  ASSERT_TRUE(sys::WriteFileAtomic(token, std::string(40, 'k')));
  const fs::path cli_config = dir_->Path() / "tofurc";
  ASSERT_TRUE(sys::WriteFileAtomic(cli_config,
                                   "provider_installation {\n  filesystem_mirror {\n    path = \"" +
                                       mirror.string() + "\"\n  }\n}\n"));
  auto refused = berthd_->Start({"--admin-token-file=" + token.string()},
                                {"TF_CLI_CONFIG_FILE=" + cli_config.string()});
  ASSERT_FALSE(refused) << "berthd started with its admin token in every run's view";
  EXPECT_NE(refused.error().ToString().find("berthd's secret " + token.string() + " is inside " +
                                            mirror.string() + ", which every local run sees"),
            std::string::npos)
      << refused.error().ToString();
  // Kept elsewhere, the same configuration starts.
  const fs::path kept = dir_->Path() / "admin-token";
  ASSERT_TRUE(sys::WriteFileAtomic(kept, std::string(40, 'k')));
  auto started = berthd_->Start({"--admin-token-file=" + kept.string()},
                                {"TF_CLI_CONFIG_FILE=" + cli_config.string()});
  ASSERT_TRUE(started) << started.error().ToString();
}

// --clusters-dir without --kubernetes would be accepted and reach nothing: berthd refuses it.
TEST_F(BerthdE2e, AClustersDirWithoutKubernetesKeepsBerthdFromStarting) {
  StopBerthd();
  auto refused = berthd_->Start({"--clusters-dir=" + dir_->Path().string()});
  ASSERT_FALSE(refused) << "berthd started with a --clusters-dir nothing reads";
  EXPECT_NE(refused.error().ToString().find("--kubernetes"), std::string::npos)
      << refused.error().ToString();
  ASSERT_TRUE(berthd_->Start());
}

// Behind a proxy that serves TLS, berthd itself speaks plain HTTP: --public-url says how people
// reach it, and an https one makes the dashboard's session cookie Secure.
TEST_F(BerthdE2e, AnHttpsPublicUrlMakesTheSessionCookieSecure) {
  auto cookie = [&] {
    auto opened = Call("POST", "/sessions");
    EXPECT_EQ(opened.status, 201) << opened.body;
    return opened.headers["set-cookie"];
  };
  EXPECT_EQ(cookie().find("; Secure"), std::string::npos) << "plain HTTP, no proxy said";
  StopBerthd();
  berthd_flags_ = {"--public-url=https://berth.example.com/"};
  StartBerthd();
  EXPECT_NE(cookie().find("; Secure"), std::string::npos);
  // The public URL is berthd's OpenID Connect issuer (docs/oidc.md), and its keys outlive a
  // restart (they are the store's).
  auto anonymous = [&](const std::string& path) {
    auto response = http_->Send({.url = url_ + path});
    EXPECT_TRUE(response && response->status == 200) << path;
    return json::parse(response ? response->body : "", nullptr, false);
  };
  const json discovery = anonymous("/.well-known/openid-configuration");
  EXPECT_EQ(discovery["issuer"], "https://berth.example.com");
  EXPECT_EQ(discovery["jwks_uri"], "https://berth.example.com/.well-known/jwks");
  const json keys = anonymous("/.well-known/jwks");
  ASSERT_EQ(keys["keys"].size(), 3u) << keys.dump();
  StopBerthd();
  StartBerthd();
  const json after = anonymous("/.well-known/jwks")["keys"];
  // (a week's boundary passed meanwhile makes the signing key the previous one: still there)
  EXPECT_NE(std::find(after.begin(), after.end(), keys["keys"][1]), after.end()) << after.dump();
  StopBerthd();
  auto refused = berthd_->Start({"--public-url=ftp://berth.example.com"});
  ASSERT_FALSE(refused) << "a public URL that is not http(s) was taken";
  EXPECT_NE(refused.error().message.find("--public-url"), std::string::npos)
      << refused.error().message;
  berthd_flags_ = {};
  StartBerthd();
}

// An environment that asks for an ID token gives each run one: tofu's providers find it in
// the file BERTH_ID_TOKEN_FILE names (and AWS's, Azure's and Google's SDKs where the
// environment names them), its claims name the run's environment and phase, and the whole
// token never reaches the stored log (its payload alone, which the module prints here, is no
// secret).
TEST_F(BerthdE2e, ARunOfAnEnvironmentThatAsksForAnIdTokenFindsOneInItsFile) {
  auto created = Call("POST", "/projects/web/envs",
                      R"({"id":"federated","env_type_id":"development",)"
                      R"("id_token":{"audience":"sts.amazonaws.com",)"
                      R"("aws":{"role_arn":"arn:aws:iam::123456789012:role/deploy"},)"
                      R"("azure":{"client_id":"11111111-2222-3333-4444-555555555555",)"
                      R"("tenant_id":"66666666-7777-8888-9999-000000000000"},)"
                      R"("gcp":{"workload_identity_provider":)"
                      R"("projects/42/locations/global/workloadIdentityPools/p/providers/x"}}})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(json::parse(created.body)["id_token"]["audience"], "sts.amazonaws.com");
  for (const auto& [field, id_token] : std::vector<std::pair<std::string, std::string>>{
           {"$.id_token.audience", R"({"audience":""})"},
           {"$.id_token.aws.role_arn", R"({"audience":"a","aws":{"role_arn":"deploy"}})"},
           {"$.id_token.azure.tenant_id",
            R"({"audience":"a","azure":{"client_id":"11111111-2222-3333-4444-555555555555"}})"},
           {"$.id_token.gcp.workload_identity_provider",
            R"({"audience":"a","gcp":{"workload_identity_provider":"pools/p"}})"}}) {
    auto refused =
        Call("POST", "/projects/web/envs",
             R"({"id":"blank","env_type_id":"development","id_token":)" + id_token + "}");
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_NE(refused.body.find(field), std::string::npos) << refused.body;
  }

  const fs::path module = dir_->Path() / "id-token-module";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module / "main.tf", R"hcl(resource "terraform_data" "who" {
  provisioner "local-exec" {
    command = "echo claims=$(cut -d. -f2 \"$BERTH_ID_TOKEN_FILE\") whole=$(cat \"$BERTH_ID_TOKEN_FILE\")"
  }
  provisioner "local-exec" {
    command = "[ \"$AWS_WEB_IDENTITY_TOKEN_FILE\" = \"$BERTH_ID_TOKEN_FILE\" ] && [ \"$ARM_OIDC_TOKEN_FILE_PATH\" = \"$BERTH_ID_TOKEN_FILE\" ] && echo clouds=$AWS_ROLE_ARN,$ARM_USE_OIDC,$ARM_TENANT_ID,$(grep -c external_account \"$GOOGLE_APPLICATION_CREDENTIALS\")"
  }
}
)hcl"));
  const std::string id = Api().Deploy(module, {{"op", "apply"}}, "web/federated");
  json done = WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Log(id);
  const std::string log = Log(id);
  const std::string marker = "(local-exec): claims=";
  const size_t at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  const size_t start = at + marker.size();
  auto payload =
      Base64Decode(log.substr(start, log.find(' ', start) - start), Base64Alphabet::kUrlNoPadding);
  ASSERT_TRUE(payload) << log;
  const json claims = json::parse(*payload);
  EXPECT_EQ(claims["sub"], "org:default:project:web:env:federated:phase:apply");
  EXPECT_EQ(claims["aud"], "sts.amazonaws.com");
  EXPECT_EQ(claims["deployment"], id);
  const size_t whole = log.find("whole=", at);
  ASSERT_NE(whole, std::string::npos) << log;
  EXPECT_FALSE(log.substr(whole + 6).starts_with("ey")) << "the token itself was logged: " << log;
  EXPECT_NE(log.find("(local-exec): clouds=arn:aws:iam::123456789012:role/deploy,true,"
                     "66666666-7777-8888-9999-000000000000,1"),
            std::string::npos)
      << log;

  // The environment the others use asks for none: its runs are told of no file.
  const std::string plain = Deploy(module, {{"op", "apply"}});
  ASSERT_EQ(WaitFor(plain, {"succeeded", "failed"})["state"], "succeeded") << Log(plain);
  EXPECT_NE(Log(plain).find("(local-exec): claims= whole="), std::string::npos) << Log(plain);
}

// The admin token's secret is written beside the data before the store takes it: a start that
// died after the store took it finds its file put in place at the next start; one that died
// before finds it dropped.
TEST_F(BerthdE2e, AnAdminTokenLeftPendingByACrashIsTakenUpOrDropped) {
  auto made = Call("POST", "/tokens", R"({"scopes":["admin"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string taken = json::parse(made.body)["secret"];
  KillBerthd();
  fs::remove(data_ / "admin-token");
  ASSERT_TRUE(sys::WriteFileAtomic(data_ / "admin-token.pending", taken + "\n"));
  StartBerthd();
  EXPECT_EQ(AdminToken(), taken);
  EXPECT_FALSE(fs::exists(data_ / "admin-token.pending"));

  KillBerthd();
  ASSERT_TRUE(sys::WriteFileAtomic(data_ / "admin-token.pending", "berth_never_stored\n"));
  StartBerthd();
  EXPECT_FALSE(fs::exists(data_ / "admin-token.pending"));
  EXPECT_EQ(AdminToken(), taken);
}

TEST_F(BerthdE2e, MetricsCountRequestsRunsAndDeploymentsInThePrometheusTextFormat) {
  std::string id = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "metrics"}}}});
  ASSERT_EQ(WaitFor(id, {"succeeded", "failed"})["state"], "succeeded") << Log(id);
  auto scraped = http_->Send({.method = "GET", .url = url_ + "/metrics"});
  ASSERT_TRUE(scraped);
  ASSERT_EQ(scraped->status, 200);
  std::string exposition = (dir_->Path() / "metrics.txt").string();
  ASSERT_TRUE(sys::WriteFileAtomic(exposition, scraped->body));
  sys::SpawnOptions parse;
  parse.argv = {"/bin/sh", "-c",
                "python3 " + (testenv::SourceDir() / "tests/tools/parse_metrics.py").string() +
                    " < " + exposition};
  auto parsed = sys::RunToCompletion(parse);
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->exit_code, 0) << parsed->output << "\n" << scraped->body;
  std::map<std::string, double> samples;  // "name{k=v,...}" -> value
  std::istringstream lines(parsed->output);
  for (std::string line; std::getline(lines, line);) {
    json sample = json::parse(line, nullptr, false);
    if (!sample.is_object()) continue;
    std::string key = sample["name"].get<std::string>() + "{";
    for (const auto& [k, v] : sample["labels"].items()) key += k + "=" + v.get<std::string>() + ",";
    samples[key + "}"] = sample["value"].get<double>();
  }
  EXPECT_EQ(samples["berth_deployments{state=succeeded,}"], 1) << parsed->output;
  EXPECT_EQ(samples["berth_runs_total{outcome=succeeded,}"], 1) << parsed->output;
  EXPECT_EQ(samples["berth_run_duration_seconds_count{}"], 1) << parsed->output;
  // Where its time went, one observation per step of its one run.
  for (const char* step : {"queue", "launch", "init", "plan", "apply"})
    EXPECT_EQ(samples["berth_deployment_step_seconds_count{step=" + std::string(step) + ",}"], 1)
        << step << "\n"
        << parsed->output;
  // The plan file read (it names its tofu), the apply's events: none of these ran.
  for (const char* step : {"version", "show", "output"})
    EXPECT_EQ(samples["berth_deployment_step_seconds_count{step=" + std::string(step) + ",}"], 0)
        << step;
  EXPECT_GE(samples["berth_http_requests_total{method=POST,route=/orgs/{org}/projects/{project}/"
                    "envs/{env}/deployments,status=201,}"],
            1)
      << parsed->output;
  EXPECT_GE(
      samples["berth_http_requests_total{method=POST,route=/runs/v1/{run}/result,status=200,}"], 1)
      << parsed->output;
  EXPECT_GT(samples["berth_gateway_bytes_total{direction=out,}"], 0) << parsed->output;
  // This berthd's lease, renewed every third of it (15 s by default).
  auto replica_id = sys::ReadFile(data_ / "replica-id");
  ASSERT_TRUE(replica_id);
  replica_id->pop_back();  // its newline
  std::array<char, 256> host{};
  ASSERT_EQ(gethostname(host.data(), host.size() - 1), 0);
  double lease = samples["berth_replica_lease_seconds{host=" + std::string(host.data()) +
                         ",replica=" + *replica_id + ",}"];
  EXPECT_GT(lease, 0) << parsed->output;
  EXPECT_LE(lease, 15) << parsed->output;
  EXPECT_EQ(scraped->body.find(token_), std::string::npos) << "a token in the metrics";
  // Served without a token, /metrics names no organization; its own are its tokens' to read.
  EXPECT_EQ(scraped->body.find("org=\""), std::string::npos) << scraped->body;
  EXPECT_EQ(http_->Send({.method = "GET", .url = url_ + "/orgs/default/metrics"})->status, 401);
  auto own = Call("GET", "/metrics");
  EXPECT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(own.headers["content-type"], "text/plain; version=0.0.4");
}

// berthd's own log (--log-format=json): a line per API request and per dispatcher decision,
// every line a JSON object, no token anywhere.
TEST_F(BerthdE2e, TheLogHasARequestLineAndTheDispatchersDecisionsAndNoToken) {
  std::string id = Deploy(Hello(), {{"op", "apply"}, {"variables", {{"name", "logs"}}}});
  ASSERT_EQ(WaitFor(id, {"succeeded", "failed"})["state"], "succeeded") << Log(id);
  EXPECT_EQ(Call("GET", "/deployments/d-none").status, 404);
  StopBerthd();
  auto text = sys::ReadFile(berthd_->LogPath(1));
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find(token_), std::string::npos) << "a token in berthd's log";
  std::map<std::string, json> seen;  // event + key field -> the line
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{")) continue;  // the start-up banner on stdout
    json doc = json::parse(line, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << line;
    ASSERT_TRUE(doc.contains("ts") && doc.contains("level") && doc.contains("event")) << line;
    std::string event = doc["event"];
    if (event == "request") event += " " + doc.value("route", "") + " " + doc.value("status", "");
    seen[event] = doc;
  }
  auto created = seen.find("request /orgs/{org}/projects/{project}/envs/{env}/deployments 201");
  ASSERT_NE(created, seen.end()) << *text;
  EXPECT_EQ(created->second["org"], "default");
  EXPECT_EQ(created->second["method"], "POST");
  EXPECT_TRUE(seen.contains("request /orgs/{org}/deployments/{id} 404")) << *text;
  ASSERT_TRUE(seen.contains("run launched")) << *text;
  EXPECT_EQ(seen["run launched"]["deployment"], id);
  EXPECT_EQ(seen["run launched"]["runner"], "here");
  ASSERT_TRUE(seen.contains("run ended")) << *text;
  EXPECT_EQ(seen["run ended"]["outcome"], "succeeded");
  EXPECT_TRUE(seen.contains("serving")) << *text;
}

TEST_F(BerthdE2e, AQueuedDeploymentWaitsUntilTheRunningOneIsCancelledAndTheLockIsFree) {
  std::string first = Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 120}}}});
  WaitForLog(first, "Creating...");
  // The interrupted create left the resource tainted: the second replaces it.
  std::string second =
      Deploy(Slow(), {{"op", "apply"}, {"allow_destroy", true}, {"variables", {{"seconds", 1}}}});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(Get(second)["state"], "queued");
  EXPECT_EQ(Call("POST", "/deployments/" + first + "/cancel").status, 202);
  json cancelled = WaitFor(first, {"cancelled", "failed", "succeeded"});
  EXPECT_EQ(cancelled["state"], "cancelled") << cancelled.dump(2) << Log(first);
  // The second needs the state lock the first held.
  json done = WaitFor(second, {"succeeded", "failed"});
  EXPECT_EQ(done["state"], "succeeded") << done.dump(2) << Log(second);
}

TEST_F(BerthdE2e, BerthdKilledMidApplyComesBackAndTheApplyEndsOnceWithStateAndLogWhole) {
  std::string id = Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 6}}}});
  WaitForLog(id, "Creating...");
  KillBerthd();
  // The gateway is down while the runner goes on: its log chunks wait and are retried.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  StartBerthd();
  json done = WaitFor(id, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Log(id);
  EXPECT_EQ(Applies(id), 1) << "the apply ran again";
  std::string log = Log(id);
  for (const char* line :
       {"[init] OpenTofu has been successfully initialized!",
        "[apply] terraform_data.slow: Creating...", "[apply] Apply complete! Resources: 1 added"})
    EXPECT_NE(log.find(line), std::string::npos) << line << " is missing from\n" << log;
  auto versions = json::parse(Call("GET", "/projects/web/envs/dev/state/versions").body);
  ASSERT_FALSE(versions["items"].empty());
  EXPECT_EQ(versions["items"].back()["run_id"], id);
  auto outputs = json::parse(Call("GET", "/deployments/" + id + "/outputs").body);
  EXPECT_EQ(outputs["outputs"]["seconds"]["value"], 6);
}

TEST_F(BerthdE2e, AFollowedLogShowsLinesWhileTheRunGoesAndEndsWithIt) {
  std::string id = Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 3}}}});
  std::string seen, state_when_creating;
  net::HttpRequest follow{.url = url_ + "/orgs/default/deployments/" + id + "/logs?follow=true"};
  follow.headers = {{"Authorization", "Bearer " + token_}};
  follow.timeout = std::chrono::minutes(2);
  auto observer = net::MakeCurlHttpClient();
  follow.on_body = [&](std::string_view piece) {
    seen.append(piece);
    if (state_when_creating.empty() && seen.find("Creating...") != std::string::npos) {
      net::HttpRequest get{.url = url_ + "/orgs/default/deployments/" + id};
      get.headers = follow.headers;
      state_when_creating = json::parse(observer->Send(get)->body)["state"];
    }
    return true;
  };
  auto followed = http_->Send(follow);
  ASSERT_TRUE(followed) << followed.error().ToString();
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(state_when_creating, "running") << seen;
  // The stream ends when the deployment has, with every line in it.
  EXPECT_EQ(Get(id)["state"], "succeeded");
  EXPECT_EQ(seen, Log(id));
}

// A followed log's HTTP body without its chunk framing; nullopt when the stream did not end
// with its last chunk.
std::optional<std::string> Dechunk(const std::string& response) {
  size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return std::nullopt;
  at += 4;
  std::string body;
  for (;;) {
    size_t line_end = response.find("\r\n", at);
    if (line_end == std::string::npos) return std::nullopt;
    size_t size = std::stoul(response.substr(at, line_end - at), nullptr, 16);
    if (size == 0) return body;
    body += response.substr(line_end + 2, size);
    at = line_end + 2 + size + 2;
  }
}

// A thousand followers of a running deployment hold no thread while they wait: the API and
// the runner gateway go on answering at once (the client's own timeout bounds each call),
// every follower gets the whole log and its end, and one follower past its token's cap is
// refused.
TEST_F(BerthdE2e, AThousandFollowersHoldNoThreadAndEachGetsTheWholeLog) {
  constexpr int kTokens = 4, kPerToken = 250;  // the server takes 256 connections per address
  StopBerthd();
  berthd_flags_ = {"--rate-limit=0"};  // a thousand requests at once from four tokens
  StartBerthd();
  std::vector<std::string> tokens;
  for (int t = 0; t < kTokens; ++t) {
    auto made = Call("POST", "/tokens", R"({"scopes":["read"]})");
    ASSERT_EQ(made.status, 201) << made.body;
    tokens.push_back(json::parse(made.body)["secret"]);
  }
  // The apply runs until the test cancels it: a follower of an ended log is not held, and on a
  // loaded machine a thousand connections take longer than any fixed sleep would allow.
  std::string id = Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 600}}}});
  WaitForLog(id, "Creating...");
  const int port = std::stoi(url_.substr(url_.rfind(':') + 1));
  // A follower on a raw connection from 127.0.0.(from + 1), with token; its socket.
  auto follow = [&](int from, const std::string& token) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in source{.sin_family = AF_INET};
    source.sin_addr.s_addr = htonl(INADDR_LOOPBACK + static_cast<uint32_t>(from));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)), 0) << errno;
    sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << errno;
    std::string request = "GET /orgs/default/deployments/" + id +
                          "/logs?follow=true HTTP/1.1\r\nHost: berthd\r\nAuthorization: Bearer " +
                          token + "\r\n\r\n";
    EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    timeval wait{.tv_sec = 30, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    return fd;
  };
  std::vector<int> followers;
  followers.reserve(kTokens * kPerToken + 7);
  for (int k = 0; k < kTokens * kPerToken; ++k)
    followers.push_back(follow(k / kPerToken, tokens[static_cast<size_t>(k / kPerToken)]));
  // Each holds its place once its answer has begun (a loaded machine serves them later than
  // they were sent): its status line, kept for the whole response read at the end.
  std::map<int, std::string> heads;
  for (int fd : followers) {
    std::array<char, 12> status{};  // "HTTP/1.1 200"
    EXPECT_EQ(recv(fd, status.data(), status.size(), MSG_WAITALL), 12);
    heads[fd].assign(status.data(), status.size());
  }
  // While they all wait, the API answers.
  EXPECT_EQ(Call("GET", "/projects").status, 200);
  // The first token holds 250 followers of its cap of 256: six more are taken, the next is not.
  std::vector<std::string> statuses;
  for (int more = 0; more < 7; ++more) {
    int fd = follow(kTokens, tokens[0]);
    std::array<char, 12> status{};  // "HTTP/1.1 200"
    EXPECT_EQ(recv(fd, status.data(), status.size(), MSG_WAITALL), 12);
    statuses.emplace_back(status.data() + 9, 3);
    followers.push_back(fd);
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"200", "200", "200", "200", "200", "200", "429"}));
  for (int extra = 0; extra < 7; ++extra) {
    close(followers.back());
    followers.pop_back();
  }
  // A follower that goes away gives its place back as soon as berthd sees it go.
  std::string again;
  for (int attempt = 0; attempt < 50 && again != "200"; ++attempt) {
    int fd = follow(kTokens, tokens[0]);
    std::array<char, 12> status{};
    EXPECT_EQ(recv(fd, status.data(), status.size(), MSG_WAITALL), 12);
    again.assign(status.data() + 9, 3);
    close(fd);
    if (again != "200") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(again, "200") << "the followers that went away still hold their places";
  token_ = AdminToken();
  EXPECT_EQ(Call("POST", "/deployments/" + id + "/cancel").status, 202);
  json done = WaitFor(id, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(done["state"], "cancelled") << done.dump(2);
  const std::string log = Log(id);
  int whole = 0;
  for (int fd : followers) {
    timeval wait{.tv_sec = 30, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    std::string response = heads[fd];
    std::array<char, 65536> buffer{};
    for (ssize_t n; (n = recv(fd, buffer.data(), buffer.size(), 0)) > 0;)
      response.append(buffer.data(), static_cast<size_t>(n));
    close(fd);
    auto body = Dechunk(response);
    whole += body && *body == log;
  }
  EXPECT_EQ(whole, kTokens * kPerToken);
}

TEST_F(BerthdE2e, ASensitiveVariableNeverReachesTheStoredLogOrTheDeployment) {
  const std::string token = "hunter2-berth-e2e";
  std::string id = Deploy(testenv::SourceDir() / "examples/secret",
                          {{"op", "apply"}, {"variables", {{"token", token}}}});
  json done = WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Log(id);
  std::string log = Log(id);
  EXPECT_NE(log.find("uses_token"), std::string::npos) << log;
  EXPECT_EQ(log.find(token), std::string::npos) << "the token reached the stored log:\n" << log;
  EXPECT_EQ(done.dump().find(token), std::string::npos) << done.dump(2);
  auto outputs = json::parse(Call("GET", "/deployments/" + id + "/outputs").body);
  EXPECT_EQ(outputs["outputs"]["token_length"]["value"], token.size());
  // A sensitive output is shown only when asked for by name of the query.
  EXPECT_TRUE(outputs["outputs"]["token"]["value"].is_null()) << outputs.dump();
  EXPECT_EQ(outputs["outputs"]["token"]["redacted"], true);
  auto revealed = json::parse(Call("GET", "/deployments/" + id + "/outputs?sensitive=true").body);
  EXPECT_EQ(revealed["outputs"]["token"]["value"], token);
}

TEST_F(BerthdE2e, ARunnerThatDiesFailsItsDeployment) {
  std::string id = Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 5}}}});
  WaitForLog(id, "Creating...");
  auto pid = sys::ReadFile(data_ / "runs" / id / "pid");
  ASSERT_TRUE(pid);
  ASSERT_EQ(kill(std::stoi(*pid), SIGKILL), 0);
  json done = WaitFor(id, {"succeeded", "failed", "cancelled"});
  EXPECT_EQ(done["state"], "failed") << done.dump(2);
  EXPECT_EQ(done["result"]["error"]["kind"], "RunnerFailed") << done.dump(2);
}

// A module that takes the state lock and would never let go: its apply ignores every stop
// signal and loops. The run's deadline ends it, its lock goes with it, and the environment's
// next deployment runs.
TEST_F(BerthdE2e, ARunThatHoldsTheLockAndNeverExitsEndsAtItsDeadlineAndFreesTheLock) {
  StopBerthd();
  berthd_flags_ = {"--run-deadline-seconds=3"};
  StartBerthd();
  fs::path module = dir_->Path() / "holder";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module / "main.tf", R"tf(
resource "terraform_data" "hold" {
  provisioner "local-exec" {
    command = "trap '' INT TERM HUP; echo holding; while true; do sleep 1; done"
  }
}
)tf"));
  std::string id = Deploy(module, {{"op", "apply"}});
  // Its token lives no longer than its deadline and a margin to save its state.
  std::optional<std::string> token;
  for (int i = 0; i < 200 && !token; ++i) {
    std::error_code ec;  // no runs folder until the first run
    for (const auto& run : fs::directory_iterator(data_ / "runs", ec)) {
      if (auto t = sys::ReadFile(run.path() / "token"); t && !t->empty()) token = *t;
    }
    if (!token) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(token);
  size_t dot = token->find('.');
  auto claims_text = Base64Decode(token->substr(dot + 1, token->find('.', dot + 1) - dot - 1),
                                  Base64Alphabet::kUrlNoPadding);
  ASSERT_TRUE(claims_text);
  json claims = json::parse(*claims_text);
  EXPECT_EQ(claims["exp"].get<int64_t>() - claims["iat"].get<int64_t>(), 3 + 300) << claims;
  json done = WaitFor(id, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(done["state"], "failed") << done.dump(2);
  EXPECT_NE(done["transitions"].back().value("reason", "").find("deadline"), std::string::npos)
      << done.dump(2);
  EXPECT_NE(Log(id).find("(local-exec): holding"), std::string::npos) << Log(id);
  // The runner is still stopping when the deployment fails: its lock goes when it has.
  json state;
  for (int i = 0; i < 600; ++i) {
    state = json::parse(Call("GET", "/projects/web/envs/dev/state").body);
    if (state["lock"].is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(state["lock"].is_null()) << state.dump(2);
  // (It replaces what the holder left, tainted.)
  std::string next = Deploy(
      Hello(), {{"op", "apply"}, {"allow_destroy", true}, {"variables", {{"name", "after"}}}});
  EXPECT_EQ(WaitFor(next, {"succeeded", "failed"})["state"], "succeeded") << Log(next);
}

}  // namespace
}  // namespace berth::server
