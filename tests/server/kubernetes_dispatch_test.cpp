// Deployments on a Kubernetes runner: the dispatcher hands a bundle deployment to the
// Kubernetes launcher, whose runner Pod (run by the test node agent, which plays the kubelet)
// fetches its bundle and inputs through the runner gateway (at KUBERNETES_CONTAINER_BACKEND_URL)
// with the token from its Secret,
// writes the state to berthd's backend, ships its log and posts its result.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <thread>

#include "cli/body.h"
#include "core/time_format.h"
#include "kube/resource.h"
#include "kube_test_cluster.h"
#include "launch/kubernetes/cluster_router.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launcher_world.h"
#include "role_bound_client.h"
#include "server/dispatch/dispatcher.h"
#include "state_server.h"
#include "sys/files.h"
#include "sys/module_bundle.h"
#include "test_tools.h"
#include "tls_issuer.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

// A launcher world (namespace, test node agent), berthd's runner-facing side on SQLite, and
// organization acme with environment web/dev on a kubernetes runner.
class KubernetesDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    static int tests = 0;  // a namespace per test
    auto world = launch::LauncherWorld::Create("dispatch-kubernetes-" + std::to_string(++tests));
    ASSERT_TRUE(world) << world.error().ToString();
    world_ = std::move(*world);
    auto dir = sys::TempDir::Create("kubernetes-dispatch");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto server = StateServer::Start(dir_->Path());
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    store::Store& store = server_->Store();
    ASSERT_TRUE(store.CreateOrganization("acme"));
    ASSERT_TRUE(store.Create({.kind = store::Kind::kProject, .org_id = "acme", .id = "web"}));
    ASSERT_TRUE(store.Create({.kind = store::Kind::kEnvType, .org_id = "acme", .id = "dev"}));
    store::Record runner{.kind = store::Kind::kRunner, .org_id = "acme", .id = "cluster"};
    runner.columns = {{"runner_type", "kubernetes"}, {"storage_type", "berth"}};
    runner.body = {{"runner_configuration", Configuration(json::object(), nullptr)},
                   {"state_storage_configuration", {{"type", "berth"}}}};
    ASSERT_TRUE(store.Create(runner));
    store::Record env{
        .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "dev"};
    env.columns = {{"env_type_id", "dev"}, {"runner_id", "cluster"}};
    ASSERT_TRUE(store.Create(env));
  }

  // One berthd replica's dispatching side, as berthd has it: a dispatcher whose kubernetes
  // runners' runs go through a cluster router to berthd's own cluster's launcher or to another
  // cluster's. Pods reach berthd at KUBERNETES_CONTAINER_BACKEND_URL (in berthd's own cluster)
  // or at the URL for elsewhere; the dispatcher's own URL (what local runners use) leads
  // nowhere, so a Pod that used it could not fetch its bundle.
  struct Replica {
    Launchers launchers;
    std::unique_ptr<Dispatcher> dispatcher;
    std::unique_ptr<launch::KubernetesLauncher> kubernetes;
    std::unique_ptr<launch::ClusterRouter> router;
  };
  // The launcher keeps its time by clock (the Pods' own waits by the system's).
  std::unique_ptr<Replica> StartReplica(const std::string& id,
                                        Clock& clock = SystemClock::Instance(),
                                        launch::ClusterMeans means = {}) {
    auto replica = std::make_unique<Replica>();
    launch::KubernetesSettings settings = world_->Settings();
    settings.container_backend_url = server_->Url();
    replica->dispatcher =
        std::make_unique<Dispatcher>(server_->Store(), replica->launchers, server_->Signer(),
                                     DispatcherOptions{.url = "http://127.0.0.1:1", .replica = id});
    replica->kubernetes = std::make_unique<launch::KubernetesLauncher>(
        world_->LauncherClient(), settings, clock, *replica->dispatcher);
    settings.container_backend_url.clear();
    replica->router = std::make_unique<launch::ClusterRouter>(
        *replica->kubernetes,
        launch::ClusterRouter::Options{
            .means = std::move(means),
            .make = [settings, &clock, dispatcher = replica->dispatcher.get()](
                        kube::KubeApi& api, const std::string&,
                        const std::string& ns) -> Result<std::unique_ptr<launch::Launcher>> {
              launch::KubernetesSettings there = settings;
              there.ns = ns;
              auto launcher =
                  std::make_unique<launch::KubernetesLauncher>(api, there, clock, *dispatcher);
              if (auto started = launcher->Start(); !started) return started.error();
              return std::unique_ptr<launch::Launcher>(std::move(launcher));
            },
            .berthd_url_elsewhere = server_->Url(),
            .observer = replica->dispatcher.get(),
            .home_api = &world_->LauncherClient()});
    replica->launchers["kubernetes"] = replica->router.get();
    EXPECT_TRUE(replica->kubernetes->Start());
    return replica;
  }

  // The runner's configuration: its job in the test's namespace, with job's other fields, and
  // its cluster (null: berthd's own).
  json Configuration(json job, const json& cluster) const {
    job["namespace"] = world_->Namespace();
    json configuration = {{"type", "kubernetes"}, {"job", std::move(job)}};
    if (!cluster.is_null()) configuration["cluster"] = cluster;
    return configuration;
  }
  void Configure(json configuration) {
    auto runner = server_->Store().Get(store::Kind::kRunner, "acme", "", "cluster");
    ASSERT_TRUE(runner);
    int64_t version = runner->version;
    runner->body["runner_configuration"] = std::move(configuration);
    ASSERT_TRUE(server_->Store().Update(*runner, version));
  }
  void SetCluster(const json& cluster) { Configure(Configuration(json::object(), cluster)); }

  // Queues a deployment of an example module as a bundle.
  void Queue(store::Deployment d, const std::string& module) {
    auto packed = sys::PackModule(testenv::SourceDir() / "examples" / module);
    ASSERT_TRUE(packed);
    auto bundle = server_->Store().DeploymentData().PutBundle("acme", *packed);
    ASSERT_TRUE(bundle);
    d.org_id = "acme";
    d.project_id = "web";
    d.env_id = "dev";
    d.spec.source_bundle = bundle->id;
    ASSERT_TRUE(server_->Store().Deployments().Create(d));
  }

  // The runner keeps the Pods of plans that wait for approval this long.
  void KeepPlanPods(const std::string& how_long) {
    Configure(Configuration({{"keep_for_approval", how_long}}, nullptr));
  }

  // Ticks until done says the deployment is where the test waits for it (at most 2 minutes).
  store::Deployment WaitFor(Dispatcher& dispatcher, const std::string& id,
                            const std::function<bool(const store::Deployment&)>& done) {
    store::Deployment now;
    for (int i = 0; i < 1200; ++i) {
      dispatcher.Tick();
      now = *server_->Store().Deployments().Get("acme", id);
      if (done(now)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return now;
  }

  // Queues a deployment id of hello (greeting id) that needs approval, and ticks until its plan
  // waits for approval (or the deployment ended).
  store::Deployment PlanThatWaits(Dispatcher& dispatcher, const std::string& id) {
    Queue({.id = id,
           .spec = {.op = DeploymentOp::kApply,
                    .variables = {{"name", id}},
                    .approval_required = true}},
          "hello");
    return WaitFor(dispatcher, id, [](const store::Deployment& d) {
      return d.state == S::kWaitingApproval || IsTerminal(d.state);
    });
  }

  // The steps of the run whose result the deployment keeps.
  static std::vector<std::string> StepNames(const store::Deployment& d) {
    std::vector<std::string> steps;
    if (d.result.end && d.result.end->run)
      for (const RunStep& step : d.result.end->run->steps) steps.push_back(step.name);
    return steps;
  }

  // The runner container of the run's Pod runs.
  bool RunnerRunning(const std::string& run_id) {
    auto pods = world_->Admin().List(kube::kPods, world_->Namespace(), {});
    for (const json& pod : pods ? pods->items : std::vector<json>{}) {
      if (pod["metadata"]["labels"].value("berth.dev/run", "") != run_id) continue;
      for (const json& c : pod["status"].value("containerStatuses", json::array()))
        if (c["name"] == "runner" && c["state"].contains("running")) return true;
    }
    return false;
  }

  std::unique_ptr<launch::LauncherWorld> world_;
  std::optional<sys::TempDir> dir_;
  std::unique_ptr<StateServer> server_;
};

TEST_F(KubernetesDispatch, ABundleDeploymentRunsInARunnerPodThroughTheContainerBackendUrl) {
  store::Store& store = server_->Store();
  auto replica = StartReplica("");
  Dispatcher& dispatcher = *replica->dispatcher;
  store::Deployment d{.id = "k1"};
  // The labels the API snapshots onto a deployment: resources that must reach the Pod, and an
  // image override this launcher is not allowed to take (an event says so).
  d.spec = {.op = DeploymentOp::kApply,
            .variables = {{"name", "pod"}},
            .labels = {{"berth.dev/runner-spec.kubernetes_limit_memory", "900Mi"},
                       {"berth.dev/runner-spec.kubernetes_request_cpu", "50m"},
                       {"berth.dev/runner-spec.kubernetes_image", "elsewhere/runner:1"}}};
  Queue(d, "hello");
  if (HasFatalFailure()) return;

  store::Deployment now;
  json resources;  // of the runner container, as the Pod was made
  for (int i = 0; i < 1200; ++i) {
    dispatcher.Tick();
    if (resources.is_null()) {
      auto pods = world_->Admin().List(kube::kPods, world_->Namespace(), {});
      for (const json& pod : pods ? pods->items : std::vector<json>{}) {
        for (const json& c : pod["spec"]["containers"])
          if (c["name"] == "runner") resources = c.value("resources", json::object());
      }
    }
    now = *store.Deployments().Get("acme", "k1");
    if (IsTerminal(now.state)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(resources["limits"]["memory"], "900Mi") << resources.dump();
  // The image the node ran, by digest, is kept with the deployment's result.
  EXPECT_TRUE(now.result.end &&
              now.result.end->image_id.starts_with("berth-test-node://berth/runner:test@sha256:"))
      << DeploymentResultToJson(now.result).dump();
  EXPECT_EQ(resources["requests"]["cpu"], "50m") << resources.dump();
  auto events = store.DeploymentData().Events("acme", "k1");
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().reason, "ImageOverrideIgnored");
  EXPECT_EQ(events->front().type, "Warning");
  ASSERT_EQ(now.state, S::kSucceeded)
      << now.transitions.dump() << DeploymentResultToJson(now.result).dump();
  auto outputs = store.DeploymentData().GetArtifact("acme", "k1", "outputs");
  ASSERT_TRUE(outputs);
  EXPECT_EQ(json::parse(outputs->content)["greeting"]["value"], "hello, pod");
  auto versions = store.States().Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  ASSERT_FALSE(versions->empty());
  EXPECT_EQ(versions->back().run_id, "k1");
  std::string log;
  for (const auto& chunk : *store.DeploymentData().ReadLog("acme", "k1", 0, 1000))
    log += chunk.data;
  EXPECT_NE(log.find("[apply] Apply complete!"), std::string::npos) << log;
  EXPECT_NE(log.find("[berth] Warning ImageOverrideIgnored: "), std::string::npos) << log;
  replica->kubernetes->Stop();
}

// Two replicas on one database: the one that launched a runner Pod dies mid-apply (its launcher
// goes, the Pod runs on); once its lease has ended, the other adopts the run, watches its Pod
// and records its end. The apply ran once, in the one Pod.
TEST_F(KubernetesDispatch, ARunOfAReplicaWhoseLeaseEndedIsAdoptedByAnotherAndCompletes) {
  store::Store& store = server_->Store();
  int64_t now = UnixMillisNow();
  ASSERT_TRUE(store.Replicas().Renew({.id = "a", .host = "h", .lease_until = now + 600000}));
  ASSERT_TRUE(store.Replicas().Renew({.id = "b", .host = "h", .lease_until = now + 600000}));
  auto a = StartReplica("a");
  Queue({.id = "k2", .spec = {.op = DeploymentOp::kApply, .variables = {{"seconds", 4}}}}, "slow");
  if (HasFatalFailure()) return;
  auto running = [&] {
    auto pods = world_->Admin().List(kube::kPods, world_->Namespace(), {});
    for (const json& pod : pods ? pods->items : std::vector<json>{})
      if (pod["status"].value("phase", "") == "Running") return true;
    return false;
  };
  for (int i = 0; i < 600 && !running(); ++i) {
    a->dispatcher->Tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(running());
  EXPECT_EQ(store.Deployments().Get("acme", "k2")->owner, "a");
  a.reset();  // replica a dies; its Pod goes on
  ASSERT_TRUE(store.Replicas().Renew({.id = "a", .host = "h", .lease_until = now}));

  auto b = StartReplica("b");
  ASSERT_TRUE(b->dispatcher->Recover());
  store::Deployment done;
  for (int i = 0; i < 1200; ++i) {
    b->dispatcher->Tick();
    done = *store.Deployments().Get("acme", "k2");
    if (IsTerminal(done.state)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_EQ(done.owner, "b");
  EXPECT_EQ(world_->Agent().PodsStarted(), 1);
  auto events = store.DeploymentData().Events("acme", "k2");
  ASSERT_TRUE(events);
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->front().reason, "RunTakenOver");
  b->kubernetes->Stop();
}

// A runner whose plan Pods are kept for their apply (job.keep_for_approval): a deployment that
// needs approval plans in a Pod that goes on waiting once the plan is posted; the approved
// apply is handed to it and runs there, in the plan's work folder, without a second init. One
// Pod in all.
TEST_F(KubernetesDispatch, AnApprovedPlanIsAppliedInItsKeptPodWithoutASecondInit) {
  store::Store& store = server_->Store();
  KeepPlanPods("10m");
  auto replica = StartReplica("");
  Dispatcher& dispatcher = *replica->dispatcher;
  store::Deployment waiting = PlanThatWaits(dispatcher, "k3");
  if (HasFatalFailure()) return;
  ASSERT_EQ(waiting.state, S::kWaitingApproval) << waiting.transitions.dump();
  // The plan's Pod still runs: its runner waits for the apply.
  ASSERT_TRUE(RunnerRunning("k3"));

  auto approved = dispatcher.Approve("acme", "k3", waiting.result.PlanHash(), "tester");
  ASSERT_TRUE(approved) << approved.error().ToString();
  store::Deployment done =
      WaitFor(dispatcher, "k3", [](const store::Deployment& d) { return IsTerminal(d.state); });
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_EQ(world_->Agent().PodsStarted(), 1);
  EXPECT_TRUE(store.DeploymentData().GetArtifact("acme", "k3", "handover:k3-apply"));
  std::vector<std::string> steps = StepNames(done);
  EXPECT_EQ(std::find(steps.begin(), steps.end(), "init"), steps.end())
      << DeploymentResultToJson(done.result).dump();
  EXPECT_NE(std::find(steps.begin(), steps.end(), "apply"), steps.end())
      << DeploymentResultToJson(done.result).dump();
  auto outputs = store.DeploymentData().GetArtifact("acme", "k3", "outputs");
  ASSERT_TRUE(outputs);
  EXPECT_EQ(json::parse(outputs->content)["greeting"]["value"], "hello, k3");
  auto versions = store.States().Versions("acme/web/dev");
  ASSERT_TRUE(versions);
  ASSERT_FALSE(versions->empty());
  EXPECT_EQ(versions->back().run_id, "k3-apply");
  replica->kubernetes->Stop();
}

// A plan cancelled while it waits for approval: its kept runner is told so and ends; a
// berthd that restarts meanwhile removes a kept Pod it no longer knows, and the apply of a
// plan approved after that runs in a Pod of its own (with its own init).
TEST_F(KubernetesDispatch, AKeptPlanPodEndsWhenItsDeploymentGoesAnotherWay) {
  store::Store& store = server_->Store();
  KeepPlanPods("10m");
  auto replica = StartReplica("");
  for (const char* id : {"k4", "k5"}) {
    store::Deployment waiting = PlanThatWaits(*replica->dispatcher, id);
    if (HasFatalFailure()) return;
    ASSERT_EQ(waiting.state, S::kWaitingApproval) << waiting.transitions.dump();
    ASSERT_TRUE(RunnerRunning(id));
    if (std::string(id) == "k4") {
      ASSERT_TRUE(replica->dispatcher->Cancel("acme", id, "tester"));
      for (int i = 0; i < 100 && RunnerRunning(id); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      EXPECT_FALSE(RunnerRunning(id));  // told to go by the gateway, within a poll or two
    }
  }
  // berthd restarts: the kept Pod of k5 is no run it tracks, and goes.
  replica.reset();
  auto restarted = StartReplica("");
  ASSERT_TRUE(restarted->dispatcher->Recover());
  for (int i = 0; i < 100 && RunnerRunning("k5"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(RunnerRunning("k5"));
  auto k5 = store.Deployments().Get("acme", "k5");
  ASSERT_TRUE(k5);
  ASSERT_TRUE(restarted->dispatcher->Approve("acme", "k5", k5->result.PlanHash(), "tester"));
  store::Deployment done = WaitFor(*restarted->dispatcher, "k5",
                                   [](const store::Deployment& d) { return IsTerminal(d.state); });
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_FALSE(store.DeploymentData().GetArtifact("acme", "k5", "handover:k5-apply"));
  std::vector<std::string> steps = StepNames(done);
  EXPECT_NE(std::find(steps.begin(), steps.end(), "init"), steps.end())
      << DeploymentResultToJson(done.result).dump();
  EXPECT_EQ(world_->Agent().PodsStarted(), 3);  // two plans, one apply
  restarted->kubernetes->Stop();
}

// An approval in the kept runner's last minute of waiting is not handed to it (it could end
// before it asked): the apply gets a Pod of its own, and the kept runner is told to go.
TEST_F(KubernetesDispatch, AnApprovalInAKeptRunnersLastMinuteGetsAPodOfItsOwn) {
  store::Store& store = server_->Store();
  KeepPlanPods("10m");
  ManualClock clock;  // the launcher's: how long it believes the kept runner has waited
  auto replica = StartReplica("", clock);
  store::Deployment waiting = PlanThatWaits(*replica->dispatcher, "k6");
  if (HasFatalFailure()) return;
  ASSERT_EQ(waiting.state, S::kWaitingApproval) << waiting.transitions.dump();
  ASSERT_TRUE(RunnerRunning("k6"));
  clock.Advance(std::chrono::minutes(9) + std::chrono::seconds(30));
  ASSERT_TRUE(replica->dispatcher->Approve("acme", "k6", waiting.result.PlanHash(), "t"));
  store::Deployment done = WaitFor(*replica->dispatcher, "k6",
                                   [](const store::Deployment& d) { return IsTerminal(d.state); });
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_FALSE(store.DeploymentData().GetArtifact("acme", "k6", "handover:k6-apply"));
  EXPECT_EQ(world_->Agent().PodsStarted(), 2);
  std::vector<std::string> steps = StepNames(done);
  EXPECT_NE(std::find(steps.begin(), steps.end(), "init"), steps.end())
      << DeploymentResultToJson(done.result).dump();
  for (int i = 0; i < 100 && RunnerRunning("k6"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(RunnerRunning("k6"));  // the kept runner, told its apply runs elsewhere
  replica->kubernetes->Stop();
}

// A runner that names another cluster (its API server, its CA and a token file of the
// organization's, or berthd's own ID token where the cluster trusts berthd as an issuer, or a
// context of berthd's kubeconfig) runs there: its Pod and Secret are made in that cluster, never
// in berthd's own, where the namespace of the same name stays empty. A token the cluster refuses
// (a stranger's, or berthd's for another audience) fails the launch, naming the cluster and its
// answer, and runs nothing anywhere.
TEST_F(KubernetesDispatch, ARunnerThatNamesAnotherClusterRunsThereAndNeverInBerthdsOwn) {
  store::Store& store = server_->Store();
  // The second cluster trusts berthd's issuer (before it starts), for its own audience.
  auto issuer =
      TlsIssuer::Start(store, SystemClock::Instance(), dir_->Path(), std::chrono::hours(24 * 7));
  ASSERT_TRUE(issuer) << issuer.error().ToString();
  (*issuer)->TrustedByNextApiserver("second-cluster", "berth:");
  auto second = testenv::KubeTestCluster::SharedSecond();
  ASSERT_TRUE(second) << second.error().ToString();
  auto remote = launch::LauncherWorld::Create(world_->Namespace(),
                                              launch::LauncherWorld::Node::kTestAgent, *second);
  ASSERT_TRUE(remote) << remote.error().ToString();
  const auto rbac = testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml";
  auto token = testenv::TokenBoundToRole((*remote)->Admin(), rbac, world_->Namespace());
  ASSERT_TRUE(token) << token.error().ToString();
  // What the operator gave organization acme: its own folder of berthd's --clusters-dir.
  const std::filesystem::path clusters = dir_->Path() / "clusters";
  std::filesystem::create_directories(clusters / "acme");
  ASSERT_TRUE(sys::WriteFileAtomic(clusters / "acme/second.token", *token + "\n"));
  ASSERT_TRUE(sys::WriteFileAtomic(clusters / "acme/refused.token", "not-a-token-of-that-cluster"));
  auto kubeconfig =
      testenv::KubeconfigBoundToRole((*remote)->Admin(), rbac, world_->Namespace(), *second);
  ASSERT_TRUE(kubeconfig);
  // acme's kubeconfig names the second cluster "test" too: its one context is that one.
  ASSERT_TRUE(sys::WriteFileAtomic(clusters / "acme/kubeconfig", *kubeconfig));
  // The runner's own user there holds the launcher's Role too, as a cluster's admin grants it.
  const json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", {{"name", "berth-runner-cluster"}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "berth-launcher"}}},
      {"subjects",
       {{{"apiGroup", "rbac.authorization.k8s.io"},
         {"kind", "User"},
         {"name", "berth:" + launch::ClusterSubject("acme", "cluster")}}}}};
  ASSERT_TRUE((*remote)->Admin().Create(kube::kRoleBindings, world_->Namespace(), binding));
  OidcIssuer& oidc = *(*issuer)->issuer;
  const launch::ClusterMeans means{.dir = clusters,
                                   .sign_id_token =
                                       [&oidc](const json& claims, std::chrono::seconds lifetime) {
                                         return oidc.Mint(claims, lifetime);
                                       },
                                   .issuer = oidc.Issuer()};
  auto replica = StartReplica("", SystemClock::Instance(), means);
  auto deploy = [&](const std::string& id) {
    Queue({.id = id, .spec = {.op = DeploymentOp::kApply, .variables = {{"name", id}}}}, "hello");
    return WaitFor(*replica->dispatcher, id,
                   [](const store::Deployment& d) { return IsTerminal(d.state); });
  };
  const json by_server = {{"server", (*second)->Url()},
                          {"certificate_authority", (*second)->CaPem()},
                          {"auth", {{"token_file", "second.token"}}}};

  SetCluster(by_server);
  store::Deployment done = deploy("r1");
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  auto outputs = store.DeploymentData().GetArtifact("acme", "r1", "outputs");
  ASSERT_TRUE(outputs);
  EXPECT_EQ(json::parse(outputs->content)["greeting"]["value"], "hello, r1");
  SetCluster({{"kubeconfig_context", "test"}});
  done = deploy("r2");
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_EQ((*remote)->Agent().PodsStarted(), 2);

  json by_id_token = by_server;
  by_id_token["auth"] = {{"oidc_audience", "second-cluster"}};
  SetCluster(by_id_token);
  // The apiserver reads berthd's discovery in the background after its start: until it has,
  // it refuses berthd's token, as it would any.
  auto config = launch::ConfigFor(*launch::ClusterTarget::Parse({{"cluster", by_id_token}}).value(),
                                  "acme", "cluster", means);
  ASSERT_TRUE(config) << config.error().ToString();
  auto as_runner = kube::MakeKubeClient(std::move(*config));
  bool trusted = false;
  for (int i = 0; i < 300 && !trusted; ++i) {
    trusted = as_runner->List(kube::kPods, world_->Namespace(), {}).has_value();
    if (!trusted) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(trusted) << "the second cluster never took berthd's ID token";
  done = deploy("r3");
  ASSERT_EQ(done.state, S::kSucceeded)
      << done.transitions.dump() << DeploymentResultToJson(done.result).dump();
  EXPECT_EQ((*remote)->Agent().PodsStarted(), 3);
  EXPECT_EQ(replica->router->Clusters().size(), 3u)
      << "a context, a token file and an ID token: a client each";

  json stranger = by_server;
  stranger["auth"]["token_file"] = "refused.token";
  json other_audience = by_server;
  other_audience["auth"] = {{"oidc_audience", "another-cluster"}};
  const std::vector<json> refusals = {stranger, other_audience};
  for (size_t i = 0; i < refusals.size(); ++i) {
    const json& refused = refusals[i];
    SetCluster(refused);
    done = deploy("refused-" + std::to_string(i));
    ASSERT_EQ(done.state, S::kFailed) << refused.dump();
    const std::string why = done.transitions.back().value("reason", "");
    EXPECT_NE(why.find("cluster " + (*second)->Url() + " cannot be reached: "), std::string::npos)
        << why;
    EXPECT_NE(why.find("Unauthorized"), std::string::npos) << why;
  }
  EXPECT_EQ((*remote)->Agent().PodsStarted(), 3);

  // A check says the same without a deployment: who berthd is in each cluster, what it lacks.
  auto check = [&](const json& cluster) {
    json configuration = {{"type", "kubernetes"}, {"job", {{"namespace", world_->Namespace()}}}};
    if (!cluster.is_null()) configuration["cluster"] = cluster;
    auto checked = replica->router->Check(
        {.org_id = "acme",
         .runner_id = "cluster",
         .runner = launch::ParseRunnerSettings(RunnerType::kKubernetes, configuration).value()});
    EXPECT_TRUE(checked) << checked.error().ToString();
    return checked ? *checked : launch::ClusterCheck{};
  };
  launch::ClusterCheck own = check(nullptr);
  EXPECT_EQ(own.user, "system:serviceaccount:" + world_->Namespace() + ":berthd") << own.error;
  EXPECT_EQ(own.missing, std::vector<std::string>{});
  launch::ClusterCheck federated = check(by_id_token);
  EXPECT_EQ(federated.error, "");
  EXPECT_EQ(federated.user, "berth:" + launch::ClusterSubject("acme", "cluster"));
  EXPECT_EQ(federated.missing, std::vector<std::string>{});
  EXPECT_NE(federated.credential.find("aud second-cluster"), std::string::npos)
      << federated.credential;
  const launch::ClusterCheck refused = check(stranger);
  EXPECT_NE(refused.error.find("Unauthorized"), std::string::npos)
      << refused.error << " user " << refused.user;
  // An account the cluster knows but grants nothing: every right is missing, by name.
  auto nobody = (*remote)->Admin().Create(
      kube::kServiceAccounts, world_->Namespace(),
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "nobody"}}}});
  ASSERT_TRUE(nobody) << nobody.error().ToString();
  auto nobodys = (*remote)->Admin().CreateSubresource(
      kube::kServiceAccounts, world_->Namespace(), "nobody", "token",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}});
  ASSERT_TRUE(nobodys) << nobodys.error().ToString();
  ASSERT_TRUE(sys::WriteFileAtomic(clusters / "acme/nobody.token",
                                   (*nobodys)["status"]["token"].get<std::string>()));
  json by_nobody = by_server;
  by_nobody["auth"]["token_file"] = "nobody.token";
  launch::ClusterCheck powerless = check(by_nobody);
  EXPECT_EQ(powerless.error, "");
  EXPECT_EQ(powerless.user, "system:serviceaccount:" + world_->Namespace() + ":nobody");
  EXPECT_EQ(powerless.missing.size(), launch::LauncherRights().size());
  EXPECT_NE(std::ranges::find(powerless.missing, "create pods"), powerless.missing.end());
  EXPECT_EQ(powerless.credential.find((*nobodys)["status"]["token"].get<std::string>()),
            std::string::npos)
      << "a check names the file, never the token";

  // berthd's own cluster saw none of it.
  EXPECT_EQ(world_->Agent().PodsStarted(), 0);
  for (const kube::ResourceKind& kind : {kube::kPods, kube::kSecrets}) {
    auto there =
        world_->Admin().List(kind, world_->Namespace(), {.label_selector = "berth.dev/run"});
    ASSERT_TRUE(there);
    EXPECT_TRUE(there->items.empty()) << kind.plural;
  }
  replica->kubernetes->Stop();
}

// What a check asks the cluster for is what the shipped Role grants, right by right: a rule
// added to one and not the other fails here.
TEST(ClusterCheck, TheRightsACheckAsksForAreTheLaunchersRole) {
  auto text = sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml");
  ASSERT_TRUE(text);
  auto role = cli::YamlToJson(text->substr(0, text->find("\n---\n")));
  ASSERT_TRUE(role) << role.error().ToString();
  std::set<std::string> granted;
  for (const json& rule : (*role)["rules"])
    for (const json& group : rule["apiGroups"])
      for (const json& resource : rule["resources"])
        for (const json& verb : rule["verbs"]) {
          const std::string name = verb.get<std::string>() + " " + resource.get<std::string>();
          granted.insert(group.get<std::string>().empty() ? name
                                                          : name + "." + group.get<std::string>());
        }
  std::set<std::string> asked;
  for (const launch::LauncherRight& right : launch::LauncherRights()) asked.insert(right.Name());
  EXPECT_EQ(asked, granted);
}

}  // namespace
}  // namespace berth::server
