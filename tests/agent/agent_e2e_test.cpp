// berth-agent end to end: the real berthd process and a kubernetes-agent runner whose agent (the
// real berth-agent process) holds only deploy/kubernetes/agent-rbac.yaml's Role in its namespace
// of the test cluster and launches each run as a Job, which the test node agent runs (the real
// runner and tofu, fetching the bundle through berthd's gateway). The test also speaks the
// agent protocol itself, with the runner's key, to hold berthd to it.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <thread>
#include <tuple>

#include "berthd_process.h"
#include "core/ed25519_key.h"
#include "core/time_format.h"
#include "crypto/agent_token.h"
#include "crypto/random.h"
#include "crypto/x509.h"
#include "kube/resource.h"
#include "launcher_world.h"
#include "loopback.h"
#include "net/http_client.h"
#include "role_bound_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One namespace with the test node agent for the whole binary; berth-agent's kubeconfig there.
// It ends with the binary, before the cluster it was made in (made after it), and takes the
// agent's Pod folders with it.
struct Cluster {
  std::unique_ptr<launch::LauncherWorld> world;
  std::string kubeconfig;
};
Cluster& SharedCluster() {
  static const std::unique_ptr<Cluster> kCluster = [] {
    auto c = std::make_unique<Cluster>();
    auto world = launch::LauncherWorld::Create("agent-e2e");
    EXPECT_TRUE(world) << world.error().ToString();
    if (!world) return c;
    auto yaml = testenv::KubeconfigBoundToRole(
        (*world)->Admin(), testenv::SourceDir() / "deploy/kubernetes/agent-rbac.yaml",
        (*world)->Namespace());
    EXPECT_TRUE(yaml) << yaml.error().ToString();
    c->kubeconfig = yaml ? *yaml : "";
    c->world = std::move(*world);
    return c;
  }();
  return *kCluster;
}

class AgentE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    Cluster& cluster = SharedCluster();
    ASSERT_TRUE(cluster.world);
    ns_ = cluster.world->Namespace();
    auto dir = sys::TempDir::Create("agent-e2e");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "kubeconfig", cluster.kubeconfig));
    // The key as a user makes it: berth-agent keygen prints the public half.
    fs::path key = dir_->Path() / "agent.key";
    auto keygen = sys::RunToCompletion({.argv = {BERTH_AGENT_BIN, "keygen", "--out", key.string()},
                                        .stdout_path = (dir_->Path() / "agent.pub").string()});
    ASSERT_TRUE(keygen && keygen->exit_code == 0) << (keygen ? keygen->output : "");
    auto seed = ParseEd25519PrivateKeyPem(sys::ReadFile(key).value());
    ASSERT_TRUE(seed) << seed.error().ToString();
    auto signer = crypto::Ed25519Signer::FromSeed(*seed);
    ASSERT_TRUE(signer);
    signer_.emplace(std::move(*signer));
    auto printed = ParseEd25519PublicKeyPem(sys::ReadFile(dir_->Path() / "agent.pub").value());
    ASSERT_TRUE(printed) << sys::ReadFile(dir_->Path() / "agent.pub").value();
    ASSERT_EQ(printed->raw, signer_->PublicKey());
    EXPECT_EQ(fs::status(key).permissions() & fs::perms::all, fs::perms::owner_read);
    berthd_.emplace(dir_->Path(), "data");
    auto started = berthd_->Start({"--rate-limit=0"});
    ASSERT_TRUE(started) << started.error().ToString();
    token_ = berthd_->AdminToken();
    for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
             {"/runners", Runner("cluster", signer_->PublicKey())},
             {"/runner-rules", {{"id", "all"}, {"runner_id", "cluster"}}},
             {"/projects", {{"id", "web"}}},
             {"/env-types", {{"id", "development"}}},
             {"/projects/web/envs", {{"id", "dev"}, {"env_type_id", "development"}}},
             {"/projects/web/envs", {{"id", "prod"}, {"env_type_id", "development"}}},
             {"/projects/web/envs", {{"id", "qa"}, {"env_type_id", "development"}}}}) {
      auto created = Api().Call("POST", path, body.dump());
      ASSERT_EQ(created.status, 201) << path << ": " << created.body;
    }
  }

  void TearDown() override {
    for (auto& agent : agents_) {
      agent.Signal(SIGTERM);
      agent.Wait();
    }
    if (berthd_ && berthd_->Running()) berthd_->Stop();
  }

  json Runner(const std::string& id, const std::string& public_key,
              const json& extra = json::object()) const {
    json configuration = {{"type", "kubernetes-agent"},
                          {"key", Ed25519PublicKeyPem(public_key)},
                          {"job", {{"namespace", ns_}}}};
    configuration.update(extra);
    return {{"id", id},
            {"runner_configuration", configuration},
            {"state_storage_configuration", {{"type", "berth"}}}};
  }

  BerthdClient Api() const { return {berthd_->Url(), token_, http_.get()}; }

  // A clean stop (exit 0), and a start again on the same port and database.
  void RestartBerthd() {
    int starts = berthd_->Starts();
    int status = berthd_->Stop();
    auto log = sys::ReadFile(berthd_->LogPath(starts));
    ASSERT_EQ(status, 0) << (log ? *log : "");
    ASSERT_TRUE(berthd_->Start({"--rate-limit=0"}));
  }

  // berth-agent as a Deployment would run it, as name; url (default: berthd's) and more
  // variables on top.
  void StartAgent(const std::string& name, const std::string& url = "",
                  const std::vector<std::string>& more_env = {}) {
    std::vector<std::string> env = {"BERTH_URL=" + (url.empty() ? berthd_->Url() : url),
                                    "BERTH_RUNNER=cluster",
                                    "BERTH_AGENT_KEY_FILE=" + (dir_->Path() / "agent.key").string(),
                                    "KUBECONFIG=" + (dir_->Path() / "kubeconfig").string(),
                                    "KUBERNETES_IMAGE=" + SharedCluster().world->Image(),
                                    "KUBERNETES_NAMESPACE=" + ns_,
                                    "KUBERNETES_CPU=100m",
                                    "KUBERNETES_MEMORY=256Mi",
                                    "POD_NAME=" + name};
    env.insert(env.end(), more_env.begin(), more_env.end());
    auto agent = sys::Subprocess::Spawn({.argv = {BERTH_AGENT_BIN, "run"},
                                         .env = std::move(env),
                                         .output_path = (dir_->Path() / (name + ".log")).string()});
    ASSERT_TRUE(agent) << agent.error().ToString();
    agents_.push_back(std::move(*agent));
  }

  std::string AgentLog(const std::string& name) const {
    auto log = sys::ReadFile(dir_->Path() / (name + ".log"));
    return log ? *log : "";
  }

  // A slow apply (seconds long) whose every apply adds a line to marker.
  std::string DeploySlow(const std::string& env, int seconds, const fs::path& marker) {
    return Api().Deploy(
        testenv::SourceDir() / "examples/slow",
        {{"op", "apply"}, {"variables", {{"seconds", seconds}, {"marker", marker.string()}}}}, env);
  }

  static int Lines(const fs::path& file) {
    std::ifstream in(file);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  // An agent request made by the test itself, with a token of its choosing.
  net::HttpResponse AgentCall(const std::string& runner, const std::string& token,
                              const std::string& path, const json& body,
                              const std::string& org = "default") const {
    auto response = http_->Send(
        {.method = "POST",
         .url = berthd_->Url() + "/agents/v1/orgs/" + org + "/runners/" + runner + path,
         .headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}},
         .body = body.dump(),
         .timeout = std::chrono::seconds(60)});
    EXPECT_TRUE(response) << response.error().ToString();
    return response ? *response : net::HttpResponse{};
  }
  std::string AgentToken(const crypto::Ed25519Signer& signer, const std::string& runner = "cluster",
                         int64_t issued = UnixSecondsNow(), int64_t lifetime = 60) const {
    return crypto::MintAgentToken(
               {"default", runner, issued, issued + lifetime, crypto::RandomToken(16)}, signer)
        .value();
  }

  std::string ns_;
  std::optional<sys::TempDir> dir_;
  std::optional<crypto::Ed25519Signer> signer_;
  std::optional<BerthdProcess> berthd_;
  std::string token_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
  std::vector<sys::Subprocess> agents_;
};

TEST_F(AgentE2e, AnAgentRunsADeploymentAsAJobAndTheRunnerShowsItConnected) {
  StartAgent("agent-a");
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/hello", {{"op", "apply"}});
  json d = Api().WaitFor(id, {"succeeded", "failed"});
  ASSERT_EQ(d["state"], "succeeded") << d.dump(2) << AgentLog("agent-a");
  EXPECT_TRUE(Api().WaitForLog(id, "Apply complete!")) << Api().Log(id);
  // What a user waits from the deployment to its Job through the agent (said, not asserted).
  for (const json& event : d["events"]) {
    if (event["reason"] != "AgentLaunched") continue;
    auto queued = ParseRfc3339Millis(d["transitions"][0]["at"].get<std::string>());
    auto launched = ParseRfc3339Millis(event["first_at"].get<std::string>());
    if (queued && launched)
      std::cout << "deployment to Job created through the agent: " << *launched - *queued
                << " ms\n";
  }
  EXPECT_NE(d["events"].dump().find("agent agent-a of runner cluster created the run's Job"),
            std::string::npos)
      << d["events"].dump(2);
  // The run was a Job in the agent's namespace, named from the run.
  auto job = SharedCluster().world->Admin().Get(kube::kJobs, ns_,
                                                "berth-run-" + d["run_id"].get<std::string>());
  EXPECT_TRUE(job || job.error().kind == ErrorKind::kNotFound);  // reaped once it ended
  auto status = Api().Call("GET", "/runners/cluster/status");
  ASSERT_EQ(status.status, 200) << status.body;
  json s = json::parse(status.body);
  EXPECT_TRUE(s["agent"]["connected"]) << s.dump(2);
  EXPECT_EQ(s["agent"]["agents"][0]["name"], "agent-a");
  EXPECT_FALSE(s["agent"]["version"].get<std::string>().empty());
  EXPECT_EQ(s["queue_depth"], 0);
  // berth get runner shows it too.
  auto cli = sys::RunToCompletion(
      {.argv = {BERTH_CLI_BIN, "get", "runner", "cluster", "-o", "json"},
       .env = std::vector<std::string>{"BERTH_API_URL=" + berthd_->Url(), "BERTH_TOKEN=" + token_,
                                       "HOME=" + dir_->Path().string()},
       .stdout_path = (dir_->Path() / "runner.json").string()});
  ASSERT_TRUE(cli && cli->exit_code == 0) << (cli ? cli->output : "");
  json shown = json::parse(sys::ReadFile(dir_->Path() / "runner.json").value());
  EXPECT_TRUE(shown["status"]["agent"]["connected"]) << shown.dump(2);
  EXPECT_EQ(shown["runner_configuration"]["type"], "kubernetes-agent");
  auto commands = json::parse(Api().Call("GET", "/runners/cluster/commands").body);
  ASSERT_EQ(commands["items"].size(), 1u) << commands.dump(2);
  EXPECT_EQ(commands["items"][0]["state"], "done");
  EXPECT_EQ(commands["items"][0]["agent"], "agent-a");
}

TEST_F(AgentE2e, LaunchesQueuedWhileNoAgentRunsRunOnceWhenOneComesBackAfterBerthdRestarts) {
  fs::path dev = dir_->Path() / "dev.marker", prod = dir_->Path() / "prod.marker";
  std::string first = DeploySlow("web/dev", 1, dev);
  std::string second = DeploySlow("web/prod", 1, prod);
  // Nobody polls: the launches wait in the queue, the deployments stay dispatched.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_NE(Api().Get(first)["events"].dump().find("AgentNotConnected"), std::string::npos);
  auto status = json::parse(Api().Call("GET", "/runners/cluster/status").body);
  EXPECT_EQ(status["queue_depth"], 2) << status.dump(2);
  EXPECT_FALSE(status["agent"]["connected"]);
  // berthd restarts with the commands queued; an agent (two, sharing the queue) comes.
  RestartBerthd();
  StartAgent("agent-a");
  StartAgent("agent-b");
  for (const std::string& id : {first, second}) {
    json d = Api().WaitFor(id, {"succeeded", "failed"});
    EXPECT_EQ(d["state"], "succeeded") << d.dump(2);
  }
  EXPECT_EQ(Lines(dev), 1);
  EXPECT_EQ(Lines(prod), 1);
  // berthd restarts while the agents poll: they poll on, and the next launch runs.
  RestartBerthd();
  fs::path qa = dir_->Path() / "qa.marker";
  std::string third = DeploySlow("web/qa", 1, qa);
  EXPECT_EQ(Api().WaitFor(third, {"succeeded", "failed"})["state"], "succeeded");
  EXPECT_EQ(Lines(qa), 1);
}

TEST_F(AgentE2e, AnAgentKilledWhileItsJobRunsIsReplacedWithoutASecondJob) {
  StartAgent("agent-a");
  fs::path marker = dir_->Path() / "marker";
  std::string id = DeploySlow("web/dev", 6, marker);
  ASSERT_TRUE(Api().WaitForLog(id, "berth-slow-started")) << Api().Log(id);
  agents_.back().Signal(SIGKILL);
  agents_.back().Wait();
  agents_.pop_back();
  StartAgent("agent-b");
  json d = Api().WaitFor(id, {"succeeded", "failed"});
  EXPECT_EQ(d["state"], "succeeded") << d.dump(2);
  EXPECT_EQ(Lines(marker), 1);
}

TEST_F(AgentE2e, ACancelReachesTheAgentWhichStopsTheJob) {
  StartAgent("agent-a");
  fs::path marker = dir_->Path() / "marker";
  std::string id = DeploySlow("web/dev", 60, marker);
  ASSERT_TRUE(Api().WaitForLog(id, "berth-slow-started")) << Api().Log(id);
  auto cancelled = Api().Call("POST", "/deployments/" + id + "/cancel");
  EXPECT_EQ(cancelled.status, 202) << cancelled.body;
  json d = Api().WaitFor(id, {"succeeded", "failed", "cancelled"});
  EXPECT_EQ(d["state"], "cancelled") << d.dump(2);
  auto commands = json::parse(Api().Call("GET", "/runners/cluster/commands").body);
  ASSERT_EQ(commands["items"].size(), 2u) << commands.dump(2);
  EXPECT_EQ(commands["items"][0]["kind"], "cancel-job");
  EXPECT_EQ(commands["items"][0]["state"], "done");
}

TEST_F(AgentE2e, ForgedExpiredReplayedAndForeignAgentTokensAreRefused) {
  const json poll = {{"agent", "tester"}, {"wait_seconds", 0}};
  auto stranger = crypto::Ed25519Signer::Generate().value();
  EXPECT_EQ(AgentCall("cluster", AgentToken(stranger), "/commands/next", poll).status, 401);
  EXPECT_EQ(AgentCall("cluster", AgentToken(*signer_, "cluster", UnixSecondsNow() - 600),
                      "/commands/next", poll)
                .status,
            401);
  EXPECT_EQ(AgentCall("cluster", AgentToken(*signer_, "cluster", UnixSecondsNow(), 3600),
                      "/commands/next", poll)
                .status,
            401);
  std::string token = AgentToken(*signer_);
  auto first = AgentCall("cluster", token, "/commands/next", poll);
  EXPECT_EQ(first.status, 200) << first.body;
  auto replayed = AgentCall("cluster", token, "/commands/next", poll);
  EXPECT_EQ(replayed.status, 401);
  EXPECT_NE(replayed.body.find("replay"), std::string::npos) << replayed.body;
  EXPECT_EQ(AgentCall("cluster", "not-a-token", "/commands/next", poll).status, 401);
  // Another runner with the same key: a token for this one does not open it.
  ASSERT_EQ(Api().Call("POST", "/runners", Runner("other", signer_->PublicKey()).dump()).status,
            201);
  EXPECT_EQ(AgentCall("other", AgentToken(*signer_), "/commands/next", poll).status, 403);
  // Another organization's path.
  EXPECT_EQ(AgentCall("cluster", AgentToken(*signer_), "/commands/next", poll, "acme").status, 401);
  // A body over 64 KiB is admitted on its token before it is read (then refused by its route,
  // here for its unknown field), also on a path the router decodes; a stranger's is not read.
  const json large = {
      {"agent", "tester"}, {"wait_seconds", 0}, {"pad", std::string(100 << 10, 'x')}};
  auto admitted = AgentCall("clus%74er", AgentToken(*signer_), "/commands/next", large);
  EXPECT_EQ(admitted.status, 400) << admitted.body;
  auto unread = AgentCall("cluster", AgentToken(stranger), "/commands/next", large);
  EXPECT_EQ(unread.status, 401);
  EXPECT_NE(unread.body.find("the body was not read"), std::string::npos) << unread.body;
  // A bad body is named.
  auto bad = AgentCall("cluster", AgentToken(*signer_), "/commands/next",
                       {{"agent", "Not A Name"}, {"wait_seconds", 99}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("wait_seconds"), std::string::npos) << bad.body;
  EXPECT_NE(bad.body.find("agent"), std::string::npos) << bad.body;
}

TEST_F(AgentE2e, NextKeyLetsAgentsRollToANewKey) {
  const json poll = {{"agent", "tester"}, {"wait_seconds", 0}};
  auto next = crypto::Ed25519Signer::Generate().value();
  EXPECT_EQ(AgentCall("cluster", AgentToken(next), "/commands/next", poll).status, 401);
  json runner = Runner("cluster", signer_->PublicKey(),
                       {{"next_key", Ed25519PublicKeyPem(next.PublicKey())}});
  runner.erase("id");
  ASSERT_EQ(Api().Call("PUT", "/runners/cluster", runner.dump()).status, 200);
  EXPECT_EQ(AgentCall("cluster", AgentToken(next), "/commands/next", poll).status, 200);
  EXPECT_EQ(AgentCall("cluster", AgentToken(*signer_), "/commands/next", poll).status, 200);
}

TEST_F(AgentE2e, AgentReportsAboutRunsNotTheirsOrMalformedAreRefused) {
  auto call = [&](const std::string& path, const json& body) {
    return AgentCall("cluster", AgentToken(*signer_), path, body);
  };
  // No launch of this runner's: nothing to report about.
  EXPECT_EQ(call("/runs/d-other/end", {{"report", {{"exit_code", 0}}}}).status, 404);
  EXPECT_EQ(call("/runs/d-other/events", {{"reason", "Started"}, {"message", "x"}}).status, 404);
  // A launch of its own, then bodies that break the rules, each named.
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/hello", {{"op", "apply"}});
  // Running as soon as its launch is queued (no agent takes it here).
  std::string run = Api().WaitFor(id, {"running"})["run_id"];
  for (const auto& [path, body, field] : std::vector<std::tuple<std::string, json, std::string>>{
           {"/runs/" + run + "/end", {{"report", {{"exit_code", 999}}}}, "exit_code"},
           {"/runs/" + run + "/end", {{"report", "OOMKilled"}}, "report"},
           {"/runs/" + run + "/events", {{"reason", "not camel"}, {"message", "x"}}, "reason"},
           {"/runs/" + run + "/events",
            {{"reason", "Big"}, {"message", std::string(5000, 'x')}},
            "message"},
           {"/commands/1/ack", {{"receipt", std::string(65, 'r')}}, "receipt"},
           {"/commands/1/reject", {{"receipt", "r"}}, "reason"}}) {
    auto refused = call(path, body);
    EXPECT_EQ(refused.status, 400) << path << " " << body.dump();
    EXPECT_NE(refused.body.find(field), std::string::npos) << refused.body;
  }
  EXPECT_EQ(call("/commands/nine/ack", {{"receipt", "r"}}).status, 404);
  // The stored log's route refuses a bad position too.
  EXPECT_EQ(Api().Call("GET", "/deployments/" + id + "/logs/chunks?after=-1").status, 400);
}

TEST_F(AgentE2e, ACommandIsHeldForALongPollAndARejectedLaunchFailsItsDeploymentAsADeadLetter) {
  // The test is the agent: a poll held open gets the launch as soon as it is queued.
  std::optional<net::HttpResponse> polled;
  std::thread poller([&] {
    polled = AgentCall("cluster", AgentToken(*signer_), "/commands/next",
                       {{"agent", "tester"}, {"version", "test"}, {"wait_seconds", 25}});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto started = std::chrono::steady_clock::now();
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/hello", {{"op", "apply"}});
  poller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  ASSERT_TRUE(polled);
  ASSERT_EQ(polled->status, 200) << polled->body;
  json command = json::parse(polled->body)["command"];
  ASSERT_TRUE(command.is_object()) << polled->body;
  EXPECT_EQ(command["kind"], "create-job");
  EXPECT_EQ(command["request"]["org_id"], "default");
  EXPECT_FALSE(command["request"]["token"].get<std::string>().empty());
  // A stale receipt settles nothing; the right one rejects it with a reason.
  std::string seq = std::to_string(command["seq"].get<int64_t>());
  EXPECT_EQ(AgentCall("cluster", AgentToken(*signer_), "/commands/" + seq + "/ack",
                      {{"receipt", "stale"}})
                .status,
            409);
  auto rejected = AgentCall("cluster", AgentToken(*signer_), "/commands/" + seq + "/reject",
                            {{"receipt", command["receipt"]}, {"reason", "no such StorageClass"}});
  EXPECT_EQ(rejected.status, 200) << rejected.body;
  json d = Api().WaitFor(id, {"succeeded", "failed"});
  EXPECT_EQ(d["state"], "failed");
  EXPECT_EQ(d["result"]["error"]["kind"], "AgentRejected") << d.dump(2);
  EXPECT_NE(d["result"]["error"]["message"].get<std::string>().find("no such StorageClass"),
            std::string::npos);
  auto dead = json::parse(Api().Call("GET", "/runners/cluster/commands?state=rejected").body);
  ASSERT_EQ(dead["items"].size(), 1u) << dead.dump(2);
  EXPECT_EQ(dead["items"][0]["reason"], "no such StorageClass");
  // The token minted for the run is no secret at rest: it is in no command berthd lists.
  EXPECT_EQ(dead.dump().find(command["request"]["token"].get<std::string>()), std::string::npos);
}

TEST_F(AgentE2e, ALaunchNoAgentTakesBeforeItsExpiryFailsWithAgentUnavailable) {
  json runner = Runner("cluster", signer_->PublicKey(), {{"command_expiry", "10s"}});
  runner.erase("id");
  auto updated = Api().Call("PUT", "/runners/cluster", runner.dump());
  ASSERT_EQ(updated.status, 200) << updated.body;
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/hello", {{"op", "apply"}});
  json d = Api().WaitFor(id, {"succeeded", "failed"});
  EXPECT_EQ(d["state"], "failed");
  EXPECT_EQ(d["result"]["error"]["kind"], "AgentUnavailable") << d.dump(2);
  auto expired = json::parse(Api().Call("GET", "/runners/cluster/commands?state=expired").body);
  EXPECT_EQ(expired["items"].size(), 1u) << expired.dump(2);
  // Out of range is refused when saved, naming the field.
  runner["runner_configuration"]["command_expiry"] = "5s";
  auto refused = Api().Call("PUT", "/runners/cluster", runner.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("command_expiry"), std::string::npos) << refused.body;
}

// The log as berthd keeps it: one armored age file per chunk, for the environment's recipient
// (it wins over the project's), that Debian's age decrypts; berth logs --identity shows it. A
// sensitive output is sealed the same way; the others stay in clear.
TEST_F(AgentE2e, ALogAndSensitiveOutputsEncryptedToTheEnvironmentsRecipientAreReadOnlyByItsKey) {
  auto keygen = [&](const std::string& name) {
    auto path = dir_->Path() / name;
    auto made = sys::RunToCompletion({.argv = {"/usr/bin/age-keygen", "-o", path.string()}});
    EXPECT_TRUE(made && made->exit_code == 0);
    std::string identity = sys::ReadFile(path).value();
    size_t at = identity.find("age1");
    return std::pair{path, identity.substr(at, identity.find('\n', at) - at)};
  };
  auto [project_key, project_recipient] = keygen("project.key");
  auto [env_key, env_recipient] = keygen("env.key");
  ASSERT_EQ(Api()
                .Call("PATCH", "/projects/web", json{{"log_recipient", project_recipient}}.dump(),
                      "application/merge-patch+json")
                .status,
            200);
  ASSERT_EQ(Api()
                .Call("PATCH", "/projects/web/envs/dev",
                      json{{"log_recipient", env_recipient}}.dump(), "application/merge-patch+json")
                .status,
            200);
  auto refused = Api().Call("PATCH", "/projects/web/envs/prod",
                            json{{"log_recipient", "age1notarecipient"}}.dump(),
                            "application/merge-patch+json");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("log_recipient"), std::string::npos) << refused.body;

  StartAgent("agent-a");
  const std::string secret = "sealed-s3cret-" + crypto::RandomToken(8);
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/secret",
                                {{"op", "apply"}, {"variables", {{"token", secret}}}});
  ASSERT_EQ(Api().WaitFor(id, {"succeeded", "failed"})["state"], "succeeded");
  std::string stored = Api().Log(id);
  EXPECT_EQ(stored.find("Apply complete!"), std::string::npos) << stored;
  // Every chunk, decrypted by age with the environment's key, holds the run's log; the
  // project's key opens none.
  std::string decrypted;
  int chunks = 0;
  for (size_t begin = stored.find("-----BEGIN AGE"); begin != std::string::npos;
       begin = stored.find("-----BEGIN AGE", begin + 1)) {
    const std::string end_line = "-----END AGE ENCRYPTED FILE-----\n";
    size_t end = stored.find(end_line, begin);
    ASSERT_NE(end, std::string::npos) << stored;
    fs::path chunk = dir_->Path() / ("chunk-" + std::to_string(++chunks) + ".age");
    ASSERT_TRUE(sys::WriteFileAtomic(chunk, stored.substr(begin, end + end_line.size() - begin)));
    auto opened = sys::RunToCompletion(
        {.argv = {"/usr/bin/age", "-d", "-i", env_key.string(), chunk.string()}});
    ASSERT_TRUE(opened && opened->exit_code == 0) << (opened ? opened->output : "");
    decrypted += opened->output;
    auto not_opened = sys::RunToCompletion(
        {.argv = {"/usr/bin/age", "-d", "-i", project_key.string(), chunk.string()}});
    ASSERT_TRUE(not_opened);
    EXPECT_NE(not_opened->exit_code, 0);
  }
  EXPECT_GT(chunks, 0) << stored;
  EXPECT_NE(decrypted.find("Apply complete!"), std::string::npos) << decrypted;

  auto shown = sys::RunToCompletion(
      {.argv = {BERTH_CLI_BIN, "logs", id, "--identity", env_key.string()},
       .env = std::vector<std::string>{"BERTH_API_URL=" + berthd_->Url(), "BERTH_TOKEN=" + token_,
                                       "HOME=" + dir_->Path().string()}});
  ASSERT_TRUE(shown && shown->exit_code == 0) << (shown ? shown->output : "");
  EXPECT_NE(shown->output.find("Apply complete!"), std::string::npos) << shown->output;
  EXPECT_EQ(shown->output.find("BEGIN AGE"), std::string::npos) << shown->output;
  // --raw: each chunk as stored, one age file each.
  fs::path raw = dir_->Path() / "raw";
  auto saved = sys::RunToCompletion(
      {.argv = {BERTH_CLI_BIN, "logs", id, "--raw", "--out", raw.string()},
       .env = std::vector<std::string>{"BERTH_API_URL=" + berthd_->Url(), "BERTH_TOKEN=" + token_,
                                       "HOME=" + dir_->Path().string()}});
  ASSERT_TRUE(saved && saved->exit_code == 0) << (saved ? saved->output : "");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(raw)) {
    if (entry.path().extension() != ".age") continue;
    ++files;
    auto opened = sys::RunToCompletion(
        {.argv = {"/usr/bin/age", "-d", "-i", env_key.string(), entry.path().string()}});
    EXPECT_TRUE(opened && opened->exit_code == 0) << entry.path();
  }
  EXPECT_EQ(files, chunks);

  // berthd holds the sensitive output only sealed; Debian's age opens it with the env's key.
  auto outputs = Api().Call("GET", "/deployments/" + id + "/outputs?sensitive=true");
  ASSERT_EQ(outputs.status, 200) << outputs.body;
  EXPECT_EQ(outputs.body.find(secret), std::string::npos) << outputs.body;
  json token = json::parse(outputs.body)["outputs"]["token"];
  EXPECT_EQ(token["value"], nullptr);
  EXPECT_EQ(json::parse(outputs.body)["outputs"]["token_length"]["value"], secret.size());
  ASSERT_TRUE(token["sealed_value"].is_string()) << outputs.body;
  fs::path sealed = dir_->Path() / "token.age";
  ASSERT_TRUE(sys::WriteFileAtomic(sealed, token["sealed_value"].get<std::string>()));
  auto opened = sys::RunToCompletion(
      {.argv = {"/usr/bin/age", "-d", "-i", env_key.string(), sealed.string()}});
  ASSERT_TRUE(opened && opened->exit_code == 0) << (opened ? opened->output : "");
  EXPECT_EQ(opened->output, json(secret).dump());
  auto read_outputs = [&](const fs::path& key) {
    std::vector<std::string> argv = {BERTH_CLI_BIN, "outputs", id, "--show-sensitive"};
    if (!key.empty()) argv.insert(argv.end(), {"--identity", key.string()});
    auto run = sys::RunToCompletion(
        {.argv = argv,
         .env = std::vector<std::string>{"BERTH_API_URL=" + berthd_->Url(), "BERTH_TOKEN=" + token_,
                                         "HOME=" + dir_->Path().string()}});
    EXPECT_TRUE(run);
    return run ? *run : sys::Completed{};
  };
  auto with_key = read_outputs(env_key);
  EXPECT_EQ(with_key.exit_code, 0) << with_key.output;
  EXPECT_NE(with_key.output.find("token = " + secret), std::string::npos) << with_key.output;
  auto without_key = read_outputs({});
  EXPECT_EQ(without_key.exit_code, 0) << without_key.output;
  EXPECT_EQ(without_key.output.find(secret), std::string::npos) << without_key.output;
  EXPECT_NE(without_key.output.find("token = (sealed"), std::string::npos) << without_key.output;
  auto wrong_key = read_outputs(project_key);
  EXPECT_NE(wrong_key.exit_code, 0) << wrong_key.output;
  EXPECT_NE(wrong_key.output.find("output token"), std::string::npos) << wrong_key.output;
}

// A TLS proxy in front of berthd (socat, which verifies client certificates against its own CA):
// berth-agent reaches berthd through it with the CA and client certificate its variables name
// and runs a deployment; an agent without the client certificate, or trusting only the
// system's CAs, is turned away and says why.
TEST_F(AgentE2e, AnAgentBehindAProxyThatWantsAClientCertificateUsesItsTlsSettings) {
  auto ca = crypto::CreateCertificateAuthority("proxy-ca", std::chrono::hours(1));
  ASSERT_TRUE(ca);
  auto server = crypto::IssueCertificate({.common_name = "proxy",
                                          .ip_addresses = {"127.0.0.1"},
                                          .use = crypto::CertificateUse::kServer},
                                         *ca);
  auto client = crypto::IssueCertificate({.common_name = "agent"}, *ca);
  ASSERT_TRUE(server && client);
  auto file = [&](const std::string& name, const std::string& pem) {
    fs::path path = dir_->Path() / name;
    EXPECT_TRUE(sys::WriteFileAtomic(path, pem));
    return path.string();
  };
  std::string ca_file = file("ca.pem", ca->certificate_pem);
  std::string server_cert = file("server.pem", server->certificate_pem);
  std::string server_key = file("server.key", server->key.pem);
  std::string client_cert = file("client.pem", client->certificate_pem);
  std::string client_key = file("client.key", client->key.pem);
  auto port = testenv::FreeLoopbackPort();
  ASSERT_TRUE(port);
  std::string berthd_address = berthd_->Url().substr(berthd_->Url().find("://") + 3);
  auto proxy = sys::Subprocess::Spawn(
      {.argv = {"/usr/bin/socat",
                "OPENSSL-LISTEN:" + std::to_string(*port) +
                    ",bind=127.0.0.1,reuseaddr,fork,verify=1,cert=" + server_cert +
                    ",key=" + server_key + ",cafile=" + ca_file,
                "TCP:" + berthd_address},
       .output_path = (dir_->Path() / "proxy.log").string()});
  ASSERT_TRUE(proxy) << proxy.error().ToString();
  const std::string url = "https://127.0.0.1:" + std::to_string(*port);
  auto through_proxy = net::MakeCurlHttpClient({.ca_pem = ca->certificate_pem,
                                                .client_cert_pem = client->certificate_pem,
                                                .client_key_pem = client->key.pem});
  auto up = testenv::WaitUntilReady(
      "socat", *proxy,
      [&] {
        auto r = through_proxy->Send({.url = url + "/healthz"});
        return r && r->status == 200;
      },
      std::chrono::seconds(30), (dir_->Path() / "proxy.log").string());
  ASSERT_TRUE(up) << up.error().ToString();

  StartAgent("no-client-cert", url, {"BERTH_CA_FILE=" + ca_file});
  StartAgent("system-trust", url,
             {"BERTH_CLIENT_CERT_FILE=" + client_cert, "BERTH_CLIENT_KEY_FILE=" + client_key});
  // Turned away, each says so and keeps asking (a fixed proxy lets it in without a restart).
  for (const char* turned_away : {"no-client-cert", "system-trust"}) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (AgentLog(turned_away).find("berthd not reached") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_NE(AgentLog(turned_away).find("berthd not reached"), std::string::npos)
        << turned_away << ": " << AgentLog(turned_away);
  }
  for (auto& agent : agents_) EXPECT_TRUE(agent.Running());
  EXPECT_FALSE(
      json::parse(Api().Call("GET", "/runners/cluster/status").body)["agent"]["connected"]);

  // A certificate without its key (or a key without its certificate) is refused, not ignored.
  auto half = sys::RunToCompletion(
      {.argv = {BERTH_AGENT_BIN, "run", "--url", url, "--runner", "cluster", "--key-file",
                (dir_->Path() / "agent.key").string(), "--client-cert", client_cert}});
  ASSERT_TRUE(half);
  EXPECT_NE(half->exit_code, 0);
  EXPECT_NE(half->output.find("--client-key"), std::string::npos) << half->output;

  StartAgent("with-tls", url,
             {"BERTH_CA_FILE=" + ca_file, "BERTH_CLIENT_CERT_FILE=" + client_cert,
              "BERTH_CLIENT_KEY_FILE=" + client_key});
  std::string id = Api().Deploy(testenv::SourceDir() / "examples/hello", {{"op", "apply"}});
  json d = Api().WaitFor(id, {"succeeded", "failed"});
  EXPECT_EQ(d["state"], "succeeded") << d.dump(2) << AgentLog("with-tls");
  json s = json::parse(Api().Call("GET", "/runners/cluster/status").body);
  ASSERT_EQ(s["agent"]["agents"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["agent"]["agents"][0]["name"], "with-tls");
  proxy->Signal(SIGTERM);
  proxy->Wait();
}

}  // namespace
}  // namespace berth::server
