// A Terraform object reconciled end to end: the real apiserver with the CRD, a real Git server
// on loopback, the runner Pod played by the test node agent (runner serve over mutual TLS),
// the real tofu with its kubernetes backend. Planned, waiting for approval, applied once its
// plan id is written, outputs in a Secret, drift seen, corrected with approvePlan: auto.
#include "controller/reconciler.h"

#include <gtest/gtest.h>

#include <thread>

#include "cli/body.h"
#include "core/base64.h"
#include "git_http_server.h"
#include "kube_test_cluster.h"
#include "sys/files.h"
#include "test_node_agent.h"
#include "test_tools.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-reconcile";
constexpr char kImage[] = "berth/runner:test";
constexpr kube::ResourceKind kCrds{"apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                   "customresourcedefinitions", false};

// Everything one test binary shares: started once.
struct World {
  kube::KubeClient* api = nullptr;
  std::unique_ptr<kube::KubeClient> owned_api;
  std::optional<sys::TempDir> dir;
  std::unique_ptr<testenv::TestNodeAgent> agent;
  std::unique_ptr<testenv::GitHttpServer> git;
  std::unique_ptr<RunnerPki> pki;
  std::unique_ptr<Reconciler> reconciler;
  fs::path kubeconfig;
};

Result<void> InstallCrd(kube::KubeApi& api) {
  auto text =
      sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes/crds/terraforms.berth.dev.yaml");
  if (!text) return text.error();
  auto crd = cli::YamlToJson(*text);
  if (!crd) return crd.error();
  auto made = api.Create(kCrds, "", *crd);
  if (!made && made.error().kind != ErrorKind::kAlreadyExists) return made.error();
  for (int i = 0; i < 100; ++i) {  // test setup: the CRD is served once Established
    auto got = api.Get(kCrds, "", "terraforms.berth.dev");
    if (got) {
      for (const json& c : (*got)["status"].value("conditions", json::array()))
        if (c["type"] == "Established" && c["status"] == "True") return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return MakeError(ErrorKind::kDeadlineExceeded, "the Terraform CRD was not established");
}

// An image folder for the node agent: the runner, the pinned tofu, the provider mirror and
// the test cluster's kubeconfig (the node agent's Pods see paths inside their image).
Result<void> BuildImage(const fs::path& root, const fs::path& kubeconfig) {
  auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
  if (!tofu) return tofu.error();
  auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
  if (!mirror) return mirror.error();
  fs::create_directories(root / "usr/local/bin");
  fs::create_directories(root / "etc/berth-test");
  fs::create_symlink(*tofu, root / "usr/local/bin/tofu");
  fs::create_symlink(BERTH_RUNNER_BIN, root / "runner");
  fs::create_symlink(*mirror, root / "mirror");
  fs::copy_file(kubeconfig, root / "etc/berth-test/kubeconfig");
  return {};
}

Result<World*> MakeWorld() {
  std::unique_ptr<World> owned(new World());
  World* world = owned.get();
  auto cluster = testenv::KubeTestCluster::Shared();
  if (!cluster) return cluster.error();
  auto config =
      kube::KubeConfig::Parse((*cluster)->KubeconfigYaml((*cluster)->AdminTls()), "/", {});
  if (!config) return config.error();
  world->owned_api = kube::MakeKubeClient(std::move(*config));
  world->api = world->owned_api.get();
  if (auto ok = InstallCrd(*world->api); !ok) return ok.error();
  for (const char* ns : {kNamespace, "berth-system"})
    if (auto ok = (*cluster)->CreateNamespace(ns); !ok) return ok.error();
  auto dir = sys::TempDir::Create("reconciler");
  if (!dir) return dir.error();
  world->dir.emplace(std::move(*dir));
  const fs::path root = world->dir->Path();
  world->kubeconfig = (*cluster)->AdminKubeconfig();
  if (auto ok = BuildImage(root / "image", world->kubeconfig); !ok) return ok.error();
  fs::create_directories(root / "pods");
  auto agent = testenv::TestNodeAgent::Start(
      *world->api, {.images = {{kImage, root / "image"}}, .work_dir = root / "pods"});
  if (!agent) return agent.error();
  world->agent = std::move(*agent);

  // The stack's repository: examples/file, served over git's smart HTTP.
  const fs::path work = root / "repo";
  fs::create_directories(work / "stacks");
  fs::copy(testenv::SourceDir() / "examples/file", work / "stacks/file",
           fs::copy_options::recursive);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "file stack"}}) {
    if (auto ok = testenv::Git(work, args); !ok) return ok.error();
  }
  if (auto ok = testenv::Git(root, {"clone", "-q", "--bare", "repo", "srv/infra.git"}); !ok)
    return ok.error();
  auto git = testenv::GitHttpServer::Start({.root = root / "srv"});
  if (!git) return git.error();
  world->git = std::move(*git);

  auto pki = RunnerPki::LoadOrCreate(*world->api, SystemClock::Instance(), {.ns = "berth-system"});
  if (!pki) return pki.error();
  world->pki = std::move(*pki);
  auto settings = ControllerSettings({{"KUBERNETES_IMAGE", kImage}});
  if (!settings) return settings.error();
  world->reconciler = std::make_unique<Reconciler>(
      *world->api, *world->pki,
      ReconcilerOptions{.settings = *settings,
                        .runner_creation_timeout = std::chrono::seconds(60)});
  return owned.release();
}

class ReconcilerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto world = MakeWorld();
    ASSERT_TRUE(world) << world.error().ToString();
    shared = *world;
  }
  static void TearDownTestSuite() { delete shared; }

  // A Terraform object of the file stack whose resource is the file at `world`.
  static json Object(const std::string& name, const fs::path& world, json runner = json::object()) {
    runner["podTemplate"]["spec"]["env"] = {
        // tofu's kubernetes backend reads the test cluster's kubeconfig: the node agent's Pods
        // have no in-cluster service account files.
        {{"name", "KUBE_IN_CLUSTER_CONFIG"}, {"value", "false"}},
        {{"name", "KUBE_CONFIG_PATH"}, {"value", "/etc/berth-test/kubeconfig"}},
        {{"name", "BERTH_PROVIDERS"}, {"value", "/mirror"}}};
    return {{"apiVersion", "berth.dev/v1alpha1"},
            {"kind", "Terraform"},
            {"metadata", {{"name", name}, {"namespace", kNamespace}}},
            {"spec",
             {{"git", {{"url", shared->git->Url("infra.git")}, {"ref", {{"branch", "main"}}}}},
              {"path", "stacks/file"},
              {"vars",
               {{{"name", "path"}, {"value", world.string()}},
                {{"name", "content"}, {"value", "from git"}}}},
              {"writeOutputsToSecret", {{"name", name + "-outputs"}}},
              {"runner", runner}}}};
  }

  static json Create(const json& object) {
    auto made = shared->api->Create(kTerraforms, kNamespace, object);
    EXPECT_TRUE(made) << made.error().ToString();
    return made ? *made : json();
  }

  static json Get(const std::string& name) {
    auto got = shared->api->Get(kTerraforms, kNamespace, name);
    EXPECT_TRUE(got) << got.error().ToString();
    return got ? *got : json();
  }

  // Reconciles the object as it is now and returns it as it is after.
  static json Reconcile(const std::string& name) {
    auto done = shared->reconciler->Reconcile(Get(name));
    EXPECT_TRUE(done) << done.error().ToString();
    return Get(name);
  }

  static json ConditionOf(const json& object, const std::string& type) {
    for (const json& c : object["status"].value("conditions", json::array()))
      if (c["type"] == type) return c;
    return json();
  }

  static void Approve(const std::string& name, const std::string& plan) {
    auto patched = shared->api->Patch(kTerraforms, kNamespace, name, kube::PatchType::kMerge,
                                      {{"spec", {{"approvePlan", plan}}}}, "test");
    ASSERT_TRUE(patched) << patched.error().ToString();
  }

  static fs::path WorldFile(const std::string& name) {
    return shared->dir->Path() / ("world-" + name + ".txt");
  }

  static inline World* shared = nullptr;
};

TEST_F(ReconcilerTest, PlansWaitsForApprovalAppliesTheNamedPlanAndWritesItsOutputs) {
  const fs::path world = WorldFile("approved");
  Create(Object("approved", world));
  json planned = Reconcile("approved");
  const json ready = ConditionOf(planned, "Ready");
  EXPECT_EQ(ready["status"], "False") << planned["status"].dump();
  EXPECT_EQ(ready["reason"], "PlanPending") << planned["status"].dump();
  const std::string plan_id = planned["status"]["plan"].value("id", "");
  ASSERT_TRUE(plan_id.starts_with("plan-")) << planned["status"].dump();
  EXPECT_EQ(planned["status"]["plan"]["add"], 1);
  EXPECT_TRUE(
      planned["status"]["lastAttemptedRevision"].get<std::string>().starts_with("main@sha1:"));
  EXPECT_EQ(planned["status"]["binary"]["name"], "tofu");
  EXPECT_FALSE(fs::exists(world)) << "nothing is applied before approval";

  // Reconciling again without approval plans nothing new and applies nothing.
  json waiting = Reconcile("approved");
  EXPECT_EQ(waiting["status"]["plan"]["id"], plan_id);
  EXPECT_FALSE(fs::exists(world));

  Approve("approved", plan_id);
  json applied = Reconcile("approved");
  EXPECT_EQ(ConditionOf(applied, "Ready")["status"], "True") << applied["status"].dump();
  EXPECT_EQ(ConditionOf(applied, "Apply")["reason"], "Applied");
  EXPECT_EQ(sys::ReadFile(world).value(), "from git");
  EXPECT_EQ(applied["status"]["lastAppliedRevision"], planned["status"]["lastAttemptedRevision"]);
  EXPECT_FALSE(applied["status"].contains("plan")) << applied["status"].dump();
  EXPECT_EQ(applied["status"]["outputsSecretName"], "approved-outputs");
  auto outputs = shared->api->Get(kube::kSecrets, kNamespace, "approved-outputs");
  ASSERT_TRUE(outputs) << outputs.error().ToString();
  EXPECT_FALSE(Base64Decode((*outputs)["data"]["id"].get<std::string>()).value().empty());
  EXPECT_EQ((*outputs)["metadata"]["ownerReferences"][0]["name"], "approved");

  // State is in the kubernetes backend's Secret beside the object.
  auto state = shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-approved");
  EXPECT_TRUE(state) << state.error().ToString();

  json settled = Reconcile("approved");
  EXPECT_EQ(ConditionOf(settled, "Ready")["reason"], "NoChanges") << settled["status"].dump();
}

TEST_F(ReconcilerTest, DriftIsReportedAndCorrectedWhenPlansApproveThemselves) {
  const fs::path world = WorldFile("drifting");
  json object = Object("drifting", world, {{"alwaysCleanup", false}});
  object["spec"]["approvePlan"] = "auto";
  Create(object);
  json applied = Reconcile("drifting");
  ASSERT_EQ(ConditionOf(applied, "Ready")["status"], "True") << applied["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "from git");
  auto pod = shared->api->Get(kube::kPods, kNamespace, "drifting-tf-runner");
  ASSERT_TRUE(pod) << "alwaysCleanup: false keeps the runner Pod";
  const std::string uid = (*pod)["metadata"]["uid"];

  ASSERT_TRUE(sys::WriteFileAtomic(world, "changed by hand"));
  json corrected = Reconcile("drifting");
  EXPECT_EQ(ConditionOf(corrected, "Ready")["status"], "True") << corrected["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "from git") << "auto approval corrects the drift";
  auto again = shared->api->Get(kube::kPods, kNamespace, "drifting-tf-runner");
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)["metadata"]["uid"], uid) << "the kept Pod served the next run too";

  // Without auto approval, drift waits for a person and says so.
  Approve("drifting", "");
  ASSERT_TRUE(sys::WriteFileAtomic(world, "changed again"));
  json drifted = Reconcile("drifting");
  EXPECT_EQ(ConditionOf(drifted, "Ready")["reason"], "DriftDetected") << drifted["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "changed again");
}

TEST_F(ReconcilerTest, AFieldThisControllerCannotHonourIsRefusedInStatusNamingIt) {
  json object = Object("unsupported", WorldFile("unsupported"));
  object["spec"]["dependsOn"] = {{{"name", "other"}}};
  Create(object);
  auto done = shared->reconciler->Reconcile(Get("unsupported"));
  EXPECT_FALSE(done);
  json refused = Get("unsupported");
  const json ready = ConditionOf(refused, "Ready");
  EXPECT_EQ(ready["reason"], "Unsupported");
  EXPECT_NE(ready["message"].get<std::string>().find("spec.dependsOn"), std::string::npos);
  EXPECT_FALSE(shared->api->Get(kube::kPods, kNamespace, "unsupported-tf-runner"));
}

}  // namespace
}  // namespace berth::controller
