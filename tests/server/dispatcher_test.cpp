// The dispatcher end to end on one machine: deployments queued in berth's store run on local
// runners (the real runner and tofu), one at a time per environment and in order, with their
// state in berthd's own backend (written under each run's token), and each ends with its result.
#include "server/dispatch/dispatcher.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "core/http_url.h"
#include "kube/kube_config.h"
#include "kube_test_cluster.h"
#include "launch/local/local_launcher.h"
#include "role_bound_client.h"
#include "server/dispatch/backend_config.h"
#include "state_server.h"
#include "sys/files.h"
#include "sys/module_bundle.h"
#include "test_tools.h"
#include "tofu_test_env.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using S = DeploymentState;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("dispatcher");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto server = StateServer::Start(dir_->Path());
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    store_ = &server_->Store();
    StartDispatching();

    ASSERT_TRUE(store_->CreateOrganization("acme"));
    store::Record project{.kind = store::Kind::kProject, .org_id = "acme", .id = "web"};
    ASSERT_TRUE(store_->Create(project));
    store::Record type{.kind = store::Kind::kEnvType, .org_id = "acme", .id = "development"};
    ASSERT_TRUE(store_->Create(type));
    // A local runner with berth's own state, and one whose state storage is Secrets in the
    // test cluster.
    store::Record runner{.kind = store::Kind::kRunner, .org_id = "acme", .id = "here"};
    runner.columns = {{"runner_type", "local"}, {"storage_type", "berth"}};
    runner.body = {{"runner_configuration", {{"type", "local"}}},
                   {"state_storage_configuration", {{"type", "berth"}}}};
    ASSERT_TRUE(store_->Create(runner));
    store::Record secrets{.kind = store::Kind::kRunner, .org_id = "acme", .id = "secrets"};
    secrets.columns = {{"runner_type", "local"}, {"storage_type", "kubernetes"}};
    secrets.body = {
        {"runner_configuration", {{"type", "local"}}},
        {"state_storage_configuration", {{"type", "kubernetes"}, {"namespace", "default"}}}};
    ASSERT_TRUE(store_->Create(secrets));
    for (const auto& [env, runner_id] : std::vector<std::pair<std::string, std::string>>{
             {"dev", "here"}, {"orphan", ""}, {"cluster", "secrets"}, {"leases", "secrets"}}) {
      store::Record e{
          .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = env};
      e.columns = {
          {"env_type_id", "development"},
          {"runner_id", runner_id.empty() ? std::nullopt : std::optional<std::string>(runner_id)}};
      ASSERT_TRUE(store_->Create(e));
    }
  }

  // The local launcher and the dispatcher, as a berthd start makes them.
  void StartDispatching() {
    auto tofu = testenv::TofuTestEnv::Shared();
    ASSERT_TRUE(tofu);
    launch::LocalLauncherOptions options;
    options.runner_binary = BERTH_RUNNER_BIN;
    options.runs_dir = dir_->Path() / "runs";
    auto sandbox = launch::Sandbox::Probe({.first = 60100, .count = 4});
    ASSERT_TRUE(sandbox) << sandbox.error().ToString();
    options.sandbox = *sandbox;
    for (const std::string& entry : (*tofu)->Environment(dir_->Path())) {
      if (!entry.starts_with("HOME=") && !entry.starts_with("PATH="))
        options.environment.push_back(entry);
    }
    options.environment.push_back("PATH=" + (*tofu)->Tofu().parent_path().string() +
                                  ":/usr/bin:/bin");
    // As berthd passes its own: the cluster that holds kubernetes state storage.
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    options.environment.push_back("KUBE_CONFIG_PATH=" + (*cluster)->AdminKubeconfig().string());
    // As berthd with a cluster: the kubernetes storage's Leases dead runs left are broken, by a
    // client that holds exactly deploy/kubernetes/state-locks-rbac.yaml in their namespace.
    auto config = kube::KubeConfig::FromFiles({(*cluster)->AdminKubeconfig()}, {});
    ASSERT_TRUE(config) << config.error().ToString();
    const std::string api_server = config->Server();
    kube_ = kube::MakeKubeClient(std::move(*config));
    auto locks_client = testenv::ClientBoundToRole(
        *kube_, testenv::SourceDir() / "deploy/kubernetes/state-locks-rbac.yaml", "default");
    ASSERT_TRUE(locks_client) << locks_client.error().ToString();
    locks_client_ = std::move(*locks_client);
    left_locks_ = std::make_unique<KubernetesStateLocks>(*locks_client_);
    // Time moves only when a test moves it (the deadline), from the real wall time.
    dispatcher_ = std::make_unique<Dispatcher>(
        *store_, launchers_, server_->Signer(),
        DispatcherOptions{
            .url = server_->Url(), .left_locks = left_locks_.get(), .clock = &clock_});
    // As a root berthd: runs reach of this machine only berthd (here the state server) and the
    // API server their kubeconfig names.
    if (!options.sandbox->RunUids().empty()) {
      std::vector<uint16_t> ports;
      for (const std::string& url : {server_->Url(), api_server}) {
        auto parsed = HttpUrl::Parse(url);
        ASSERT_TRUE(parsed) << url;
        ports.push_back(static_cast<uint16_t>(parsed->port));
      }
      auto firewall = launch::RunFirewall::Install(options.sandbox->RunUids(), ports);
      ASSERT_TRUE(firewall) << firewall.error().ToString();
      options.firewall = firewall_ = *firewall;
    }
    launcher_ = std::make_unique<launch::LocalLauncher>(options, *dispatcher_);
    launchers_["local"] = launcher_.get();
  }

  void TearDown() override {
    launcher_.reset();  // before the dispatcher its reports go to
    // No run is left (each test waits for its own): nothing of the test stays in the machine's
    // firewall.
    if (firewall_) EXPECT_TRUE(firewall_->Remove());
  }

  void Queue(const std::string& env, const std::string& id, const std::string& op,
             const std::string& org = "acme", const std::string& example = "hello",
             const json& variables = json::object()) {
    store::Deployment d{.org_id = org, .project_id = "web", .env_id = env, .id = id};
    d.spec = DeploymentSpec::FromRequest(
                 {{"op", op},
                  {"source", {{"path", (testenv::SourceDir() / "examples" / example).string()}}},
                  {"variables", variables}})
                 .value();
    ASSERT_TRUE(store_->Deployments().Create(d));
  }

  // Ticks (as berthd does) until every named deployment has ended, bounded.
  bool RunUntilEnded(const std::vector<std::string>& ids, const std::string& org = "acme") {
    for (int i = 0; i < 1200; ++i) {
      dispatcher_->Tick();
      bool all = true;
      for (const auto& id : ids) all = all && IsTerminal(store_->Deployments().Get(org, id)->state);
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  static std::string At(const store::Deployment& d, const std::string& state) {
    for (const auto& t : d.transitions) {
      if (t["state"] == state) return t["at"];
    }
    return "";
  }

  // Until the slow example's apply has started (tofu holds the state lock then).
  bool UntilApplying(const std::string& id) {
    for (int i = 0; i < 1200; ++i) {
      dispatcher_->Tick();
      auto log = sys::ReadFile(dir_->Path() / "runs" / id / "runner.log");
      if (log && log->find("berth-slow-started") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  ManualClock clock_;
  std::unique_ptr<kube::KubeClient> kube_;
  std::unique_ptr<kube::KubeClient> locks_client_;  // berthd's, with the state-locks Role
  std::unique_ptr<KubernetesStateLocks> left_locks_;
  std::optional<sys::TempDir> dir_;
  std::unique_ptr<StateServer> server_;
  store::Store* store_ = nullptr;
  Launchers launchers_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<launch::LocalLauncher> launcher_;
  std::shared_ptr<const launch::RunFirewall> firewall_;
};

TEST_F(DispatcherTest, DeploymentsOfAnEnvironmentRunInOrderWithTheirStateInBerth) {
  Queue("dev", "d1", "apply");
  Queue("dev", "d2", "destroy");  // a second write to the same state, after the first
  ASSERT_TRUE(RunUntilEnded({"d1", "d2"}));
  auto d1 = store_->Deployments().Get("acme", "d1");
  auto d2 = store_->Deployments().Get("acme", "d2");
  ASSERT_EQ(d1->state, S::kSucceeded)
      << d1->transitions.dump() << DeploymentResultToJson(d1->result).dump();
  ASSERT_EQ(d2->state, S::kSucceeded)
      << d2->transitions.dump() << DeploymentResultToJson(d2->result).dump();
  EXPECT_LE(At(*d1, "succeeded"), At(*d2, "dispatched"));  // one at a time, in order
  ASSERT_TRUE(d1->result.end && d1->result.end->run);
  EXPECT_EQ(d1->result.end->run->op, "apply");

  auto versions = store_->States().Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  ASSERT_FALSE(versions->empty());
  EXPECT_EQ(versions->front().run_id, "d1");  // written under d1's own token
  EXPECT_EQ(versions->back().run_id, "d2");
  auto last = store_->States().Current("acme/web/dev");
  ASSERT_TRUE(last);
  EXPECT_EQ(json::parse(*last)["resources"].size(), 0u);  // destroyed
  EXPECT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  auto log = sys::ReadFile(dir_->Path() / "runs/d1/runner.log");
  ASSERT_TRUE(log);
  EXPECT_EQ(log->find("eyJ"), std::string::npos) << "a token reached the log";

  // Through the gateway: the whole log, in order, and the outputs.
  auto chunks = store_->DeploymentData().ReadLog("acme", "d1", 0, 1000);
  ASSERT_TRUE(chunks);
  std::string shipped;
  for (const auto& c : *chunks) shipped += c.data;
  EXPECT_NE(shipped.find("[init]"), std::string::npos) << shipped;
  EXPECT_LT(shipped.find("[init]"), shipped.find("[apply]")) << shipped;
  EXPECT_EQ(shipped.find("eyJ"), std::string::npos) << "a token reached the shipped log";
  auto outputs = store_->DeploymentData().GetArtifact("acme", "d1", "outputs");
  ASSERT_TRUE(outputs);
  EXPECT_TRUE(json::parse(outputs->content).contains("greeting")) << outputs->content;
}

TEST_F(DispatcherTest, ARestartedBerthdTakesUpWhatItsRunnersWereDoing) {
  Queue("dev", "r1", "apply");
  ASSERT_EQ(dispatcher_->Tick(), 1);
  EXPECT_EQ(store_->Deployments().Get("acme", "r1")->state, S::kRunning);
  // berthd goes away mid-run: its runner goes on (or finishes) alone.
  launcher_.reset();
  dispatcher_.reset();
  StartDispatching();
  ASSERT_TRUE(dispatcher_->Recover());
  ASSERT_TRUE(RunUntilEnded({"r1"}));
  auto r1 = store_->Deployments().Get("acme", "r1");
  EXPECT_EQ(r1->state, S::kSucceeded)
      << r1->transitions.dump() << DeploymentResultToJson(r1->result).dump();
  auto log = sys::ReadFile(dir_->Path() / "runs/r1/runner.log");
  ASSERT_TRUE(log);
  size_t applies = 0;
  for (size_t at = 0; (at = log->find("Apply complete!", at)) != std::string::npos; ++at) ++applies;
  EXPECT_EQ(applies, 1u);  // never run twice
}

// berthd died between a deployment's dispatch and the state lock it holds for the run: the
// berthd after it takes the lock before the runner starts, so the run's state writes land.
TEST_F(DispatcherTest, ARunDispatchedByABerthdThatDiedBeforeItsLockWritesUnderTheNextOnes) {
  Queue("dev", "r2", "apply");
  ASSERT_TRUE(store_->Deployments().Transition("acme", "r2", S::kQueued, S::kDispatched,
                                               "runner here", {.run_id = "r2"}));
  ASSERT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  ASSERT_TRUE(dispatcher_->Recover());
  ASSERT_TRUE(RunUntilEnded({"r2"}));
  auto r2 = store_->Deployments().Get("acme", "r2");
  EXPECT_EQ(r2->state, S::kSucceeded)
      << r2->transitions.dump() << DeploymentResultToJson(r2->result).dump();
  auto versions = store_->States().Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  EXPECT_EQ(versions->size(), 1u) << "its state was written";
}

TEST_F(DispatcherTest, PlanHashesAreKeyedByTheEnvironmentsOwnKey) {
  // A second organization with the same project, environment and local runner.
  ASSERT_TRUE(store_->CreateOrganization("beta"));
  ASSERT_TRUE(store_->Create({.kind = store::Kind::kProject, .org_id = "beta", .id = "web"}));
  ASSERT_TRUE(
      store_->Create({.kind = store::Kind::kEnvType, .org_id = "beta", .id = "development"}));
  store::Record runner = *store_->Get(store::Kind::kRunner, "acme", "", "here");
  runner.org_id = "beta";
  ASSERT_TRUE(store_->Create(runner));
  store::Record env{
      .kind = store::Kind::kEnvironment, .org_id = "beta", .parent_id = "web", .id = "dev"};
  env.columns = {{"env_type_id", "development"}, {"runner_id", "here"}};
  ASSERT_TRUE(store_->Create(env));
  // And a second environment of acme's.
  store::Record twin{
      .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "twin"};
  twin.columns = {{"env_type_id", "development"}, {"runner_id", "here"}};
  ASSERT_TRUE(store_->Create(twin));

  const json same = {{"token", "s3cret-value"}};
  Queue("dev", "h1", "plan", "acme", "secret", same);
  Queue("dev", "h2", "plan", "acme", "secret", same);
  Queue("dev", "h3", "plan", "acme", "secret", {{"token", "another-value"}});
  Queue("dev", "b1", "plan", "beta", "secret", same);
  Queue("twin", "t1", "plan", "acme", "secret", same);
  ASSERT_TRUE(RunUntilEnded({"h1", "h2", "h3", "t1"}));
  ASSERT_TRUE(RunUntilEnded({"b1"}, "beta"));
  auto plan = [&](const std::string& org, const std::string& id) {
    auto d = store_->Deployments().Get(org, id);
    EXPECT_EQ(d->state, S::kSucceeded)
        << d->transitions.dump() << DeploymentResultToJson(d->result).dump();
    const auto& run = d->result.end ? d->result.end->run : std::nullopt;
    return run && run->plan ? PlanSummaryToJson(*run->plan) : json();
  };
  json h1 = plan("acme", "h1"), h2 = plan("acme", "h2"), h3 = plan("acme", "h3");
  json b1 = plan("beta", "b1"), t1 = plan("acme", "t1");
  EXPECT_EQ(h1["keyed"], true) << h1.dump();
  EXPECT_EQ(h1["hash"], h2["hash"]) << "the same effect planned twice";
  EXPECT_NE(h1["hash"], h3["hash"]) << "another secret value is another effect to approve";
  EXPECT_NE(h1["hash"], b1["hash"]) << "another organization, another key";
  EXPECT_NE(h1["hash"], t1["hash"]) << "another environment, another key: equal hashes would "
                                       "tell that two environments share a secret value";
}

// berthd holds its own state's lock for the whole run (tofu takes none): a runner killed
// mid-apply leaves it behind, and berthd releases it when the run ends, so the next deployment
// runs at once. Its release is no event: every run ends holding it.
TEST_F(DispatcherTest, AStateLockARunnerDiedHoldingIsReleasedForTheNextDeployment) {
  Queue("dev", "k1", "apply", "acme", "slow", {{"seconds", 60}});
  Queue("dev", "k2", "apply");
  ASSERT_TRUE(UntilApplying("k1"));
  auto holder = store_->States().Holder("acme/web/dev");
  ASSERT_TRUE(holder) << "berthd holds the lock while the run applies";
  EXPECT_EQ(holder->run_id, "k1");
  EXPECT_EQ(holder->id, "k1");
  EXPECT_EQ(json::parse(holder->info).value("Who", ""), "berthd@k1") << holder->info;
  auto pid = sys::ReadFile(dir_->Path() / "runs/k1/pid");
  ASSERT_TRUE(pid);
  ASSERT_EQ(kill(-std::stoi(*pid), SIGKILL), 0);  // the runner and tofu, at once

  ASSERT_TRUE(RunUntilEnded({"k1", "k2"}));
  auto k1 = store_->Deployments().Get("acme", "k1");
  auto k2 = store_->Deployments().Get("acme", "k2");
  EXPECT_EQ(k1->state, S::kFailed);
  EXPECT_EQ(k2->state, S::kSucceeded)
      << k2->transitions.dump() << DeploymentResultToJson(k2->result).dump();
  EXPECT_EQ(store_->States().Holder("acme/web/dev").error().kind, ErrorKind::kNotFound);
  auto events = store_->DeploymentData().Events("acme", "k1");
  ASSERT_TRUE(events);
  for (const auto& event : *events) EXPECT_NE(event.reason, "StateLockReleased");
}

// A lock another run left (a lost runner may still be writing) fails the next deployment at
// once, naming the holder and how to free it, instead of tofu waiting minutes for it.
TEST_F(DispatcherTest, AStateLockAnotherRunLeftFailsTheDeploymentAtOnceNamingItsHolder) {
  ASSERT_TRUE(store_->States().Lock("acme/web/dev",
                                    {"lost", R"({"ID":"lost","Who":"berthd@lost"})", 0, "lost"}));
  Queue("dev", "k3", "apply");
  ASSERT_TRUE(RunUntilEnded({"k3"}));
  auto k3 = store_->Deployments().Get("acme", "k3");
  ASSERT_EQ(k3->state, S::kFailed);
  std::string reason = k3->transitions.back()["reason"];
  EXPECT_NE(reason.find("is locked by berthd@lost"), std::string::npos) << reason;
  EXPECT_NE(reason.find("berth state unlock dev --project web"), std::string::npos) << reason;
  EXPECT_EQ(store_->States().Holder("acme/web/dev")->id, "lost") << "left for an operator";
  EXPECT_FALSE(std::filesystem::exists(dir_->Path() / "runs/k3")) << "no runner was started";
}

// The deadline on the dispatcher's clock: moved by hand, no test waits six hours (or sleeps).
TEST_F(DispatcherTest, ARunPastItsDeadlineIsStoppedAndItsDeploymentFailed) {
  Queue("dev", "late", "apply", "acme", "slow", {{"seconds", 60}});
  ASSERT_TRUE(UntilApplying("late"));
  clock_.Advance(std::chrono::hours(5));
  dispatcher_->Tick();
  EXPECT_EQ(store_->Deployments().Get("acme", "late")->state, S::kRunning);
  clock_.Advance(std::chrono::hours(2));  // past the default deadline of six hours
  dispatcher_->Tick();
  auto late = store_->Deployments().Get("acme", "late");
  ASSERT_EQ(late->state, S::kFailed) << late->transitions.dump();
  EXPECT_NE(late->transitions.back()["reason"].get<std::string>().find("deadline"),
            std::string::npos)
      << late->transitions.dump();
  // Its runner was told to stop: it ends (cleanly: the result says Cancelled) well before the
  // apply's 60 seconds are up.
  bool ended = false;
  for (int i = 0; i < 600 && !ended; ++i) {
    ended = sys::ReadFile(dir_->Path() / "runs/late/out/result.json").has_value();
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ended);
  auto result = json::parse(*sys::ReadFile(dir_->Path() / "runs/late/out/result.json"));
  EXPECT_EQ(result["error"]["kind"], "Cancelled") << result.dump();
}

// A runner saved before berthd refused what it does not honour yet names a cloud cluster
// berthd does not reach yet: its deployments fail, naming the field, and run nowhere (here the
// local launcher stands for berthd's own cluster: it would have run them).
TEST_F(DispatcherTest, ARunnerNamingAClusterBerthdCannotReachFailsItsDeploymentsNamingTheField) {
  launchers_["kubernetes-gke"] = launcher_.get();
  store::Record runner{.kind = store::Kind::kRunner, .org_id = "acme", .id = "gke"};
  runner.columns = {{"runner_type", "kubernetes-gke"}, {"storage_type", "berth"}};
  runner.body = {
      {"runner_configuration",
       {{"type", "kubernetes-gke"}, {"cluster", {{"name", "prod"}, {"location", "europe-west3"}}}}},
      {"state_storage_configuration", {{"type", "berth"}}}};
  ASSERT_TRUE(store_->Create(runner));
  store::Record env{
      .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "gke"};
  env.columns = {{"env_type_id", "development"}, {"runner_id", "gke"}};
  ASSERT_TRUE(store_->Create(env));
  // A bundle, as a Kubernetes runner's deployments are (a folder runs on local runners only).
  auto packed = sys::PackModule(testenv::SourceDir() / "examples/hello");
  ASSERT_TRUE(packed);
  auto bundle = store_->DeploymentData().PutBundle("acme", *packed);
  ASSERT_TRUE(bundle);
  store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = "gke", .id = "gke-1"};
  d.spec =
      DeploymentSpec::FromRequest({{"op", "plan"}, {"source", {{"bundle", bundle->id}}}}).value();
  ASSERT_TRUE(store_->Deployments().Create(d));
  ASSERT_TRUE(RunUntilEnded({"gke-1"}));
  auto ended = store_->Deployments().Get("acme", "gke-1");
  EXPECT_EQ(ended->state, S::kFailed);
  EXPECT_NE(ended->transitions.back()["reason"].get<std::string>().find(
                "runner gke: $.runner_configuration.cluster is not honoured yet"),
            std::string::npos)
      << ended->transitions.back().dump();
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/gke-1")) << "it ran elsewhere";
}

// A runner row its type's schema refuses (written by hand, or by a berthd of other rules) is
// not run with what could be read of it: its memory limit unreadable, the run would have had
// none.
TEST_F(DispatcherTest, ARunnerSavedAgainstItsSchemaFailsItsDeploymentsNamingTheField) {
  auto runner = store_->Get(store::Kind::kRunner, "acme", "", "here");
  ASSERT_TRUE(runner);
  runner->body["runner_configuration"]["limits"] = {{"memory", "a lot"}};
  ASSERT_TRUE(store_->Update(*runner, runner->version));
  Queue("dev", "unlimited", "plan");
  ASSERT_TRUE(RunUntilEnded({"unlimited"}));
  auto ended = store_->Deployments().Get("acme", "unlimited");
  EXPECT_EQ(ended->state, S::kFailed);
  const std::string why = ended->transitions.back().value("reason", "");
  EXPECT_NE(why.find("runner here as saved: "), std::string::npos) << why;
  EXPECT_NE(why.find("$.runner_configuration.limits.memory"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/unlimited")) << "it ran without its limit";
}

TEST_F(DispatcherTest, ADeploymentWithoutARunnerFailsWithTheReason) {
  Queue("orphan", "o1", "plan");
  ASSERT_TRUE(RunUntilEnded({"o1"}));
  auto o1 = store_->Deployments().Get("acme", "o1");
  EXPECT_EQ(o1->state, S::kFailed);
  EXPECT_NE(o1->transitions.back()["reason"].get<std::string>().find("has no runner"),
            std::string::npos);
}

// A runner killed mid-apply leaves the kubernetes storage's Lease held: tofu cannot unlock it
// any more. berthd breaks it, seeing in its lock info that the dead run took it (its sandbox's
// host name), and the next deployment runs at once instead of failing with StateLocked.
TEST_F(DispatcherTest, AKubernetesStorageLeaseARunnerDiedHoldingIsBrokenForTheNextDeployment) {
  Queue("leases", "l1", "apply", "acme", "slow", {{"seconds", 60}});
  Queue("leases", "l2", "apply", "acme", "slow", {{"seconds", 0}});
  ASSERT_TRUE(UntilApplying("l1"));
  const std::string lease =
      "lock-tfstate-default-" + KubernetesSecretSuffix({"acme", "web", "leases"});
  auto held = kube_->Get(kube::kLeases, "default", lease);
  ASSERT_TRUE(held) << held.error().ToString();
  json info = json::parse(
      (*held)["metadata"]["annotations"].value("app.terraform.io/lock-info", "{}"), nullptr, false);
  EXPECT_TRUE(info.value("Who", "").ends_with("@l1")) << held->dump(2);
  auto pid = sys::ReadFile(dir_->Path() / "runs/l1/pid");
  ASSERT_TRUE(pid);
  ASSERT_EQ(kill(-std::stoi(*pid), SIGKILL), 0);  // the runner and tofu, at once

  ASSERT_TRUE(RunUntilEnded({"l1", "l2"}));
  auto l2 = store_->Deployments().Get("acme", "l2");
  EXPECT_EQ(store_->Deployments().Get("acme", "l1")->state, S::kFailed);
  EXPECT_EQ(l2->state, S::kSucceeded)
      << l2->transitions.dump() << DeploymentResultToJson(l2->result).dump();
  auto events = store_->DeploymentData().Events("acme", "l1");
  ASSERT_TRUE(events);
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().reason, "StateLockReleased");
  EXPECT_NE(events->back().message.find(lease), std::string::npos) << events->back().message;
  auto after = kube_->Get(kube::kLeases, "default", lease);
  ASSERT_TRUE(after);
  EXPECT_FALSE((*after)["spec"].contains("holderIdentity")) << after->dump(2);
}

// A Lease some other holder took (an operator's tofu, another installation) is never broken.
TEST_F(DispatcherTest, AKubernetesStorageLeaseHeldByAnotherIsLeftAlone) {
  const std::string lease =
      "lock-tfstate-default-" + KubernetesSecretSuffix({"acme", "web", "elsewhere"});
  json info = {{"ID", "op-1"}, {"Who", "alice@laptop"}, {"Operation", "OperationTypeApply"}};
  json object = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", lease}, {"annotations", {{"app.terraform.io/lock-info", info.dump()}}}}},
      {"spec", {{"holderIdentity", "op-1"}}}};
  ASSERT_TRUE(kube_->Create(kube::kLeases, "default", object));
  const StateStorage storage = KubernetesStateStorage{.ns = "default"};
  auto broken = left_locks_->BreakIfHeldBy(storage, {"acme", "web", "elsewhere"}, "laptop-run");
  ASSERT_TRUE(broken) << broken.error().ToString();
  EXPECT_FALSE(*broken);
  broken = left_locks_->BreakIfHeldBy(storage, {"acme", "web", "elsewhere"}, "laptop");
  ASSERT_TRUE(broken);
  EXPECT_TRUE(*broken) << "alice@laptop is the holder named laptop";
  ASSERT_TRUE(kube_->Delete(kube::kLeases, "default", lease, {}));
}

TEST_F(DispatcherTest, AKubernetesStateStorageKeepsTheStateInASecretOfItsOwn) {
  Queue("cluster", "k1", "apply");
  Queue("cluster", "k2", "destroy");  // reads the state k1 left
  ASSERT_TRUE(RunUntilEnded({"k1", "k2"}));
  auto k1 = store_->Deployments().Get("acme", "k1");
  auto k2 = store_->Deployments().Get("acme", "k2");
  ASSERT_EQ(k1->state, S::kSucceeded) << DeploymentResultToJson(k1->result).dump();
  ASSERT_EQ(k2->state, S::kSucceeded) << DeploymentResultToJson(k2->result).dump();
  EXPECT_EQ(DeploymentResultToJson(k2->result)["run"]["plan"]["destroy"], 1)
      << DeploymentResultToJson(k2->result).dump();
  EXPECT_TRUE(store_->States().Versions("acme/web/cluster")->empty()) << "the state went to berth";
}

}  // namespace
}  // namespace berth::server
