// The Kubernetes launcher end to end: the real apiserver (RBAC on, Pod Security `restricted`
// enforced), the launcher as a service account bound to exactly deploy/'s Role, the test node
// agent playing the kubelet, and the real runner driving the real tofu in the Pods.
#include "launch/kubernetes/kubernetes_launcher.h"

#include <gtest/gtest.h>

#include <thread>

#include "fault_injecting_kube_api.h"
#include "launcher_world.h"
#include "outcome_recorder.h"
#include "sys/files.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class KubernetesLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string ns = LauncherWorld::NamespaceForThisTest("launch-");
    auto world = LauncherWorld::Create(ns);
    ASSERT_TRUE(world) << world.error().ToString();
    world_ = std::move(*world);
    ns_ = world_->Namespace();
    admin_ = &world_->Admin();
    client_ = &world_->LauncherClient();
    agent_ = &world_->Agent();
  }

  void TearDown() override { launcher_.reset(); }

  KubernetesSettings Settings(const std::string& grace = "5m", bool resources = true) {
    return world_->Settings(grace, resources);
  }

  void StartLauncher(kube::KubeApi& api, KubernetesSettings settings, Clock& clock,
                     KubernetesLauncherOptions options = {}) {
    launcher_ = std::make_unique<KubernetesLauncher>(api, std::move(settings), clock, outcomes_,
                                                     std::move(options));
    auto started = launcher_->Start();
    ASSERT_TRUE(started) << started.error().ToString();
  }
  void StartLauncher() { StartLauncher(*client_, Settings(), SystemClock::Instance()); }

  LaunchRequest Request(const std::string& run_id, const std::string& op, const std::string& module,
                        json runner_config = json::object()) {
    return world_->Request(run_id, op, module, std::move(runner_config));
  }

  json RunnerConfigWithLabels(const json& labels) {
    return {{"runner", {{"podTemplate", {{"metadata", {{"labels", labels}}}}}}}};
  }

  // Waits (bounded) until the run's main container runs.
  bool WaitUntilRunning(const std::string& run_id) {
    for (int i = 0; i < 1200; ++i) {
      auto pod = admin_->Get(kube::kPods, ns_, "berth-run-" + run_id);
      if (pod && (*pod)["status"].value("phase", "") == "Running") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Waits (bounded) for a Pod deleted gracefully to be gone.
  bool PodGone(const std::string& run_id) {
    for (int i = 0; i < 600 && PodExists(run_id); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return !PodExists(run_id);
  }

  bool PodExists(const std::string& run_id) {
    return static_cast<bool>(admin_->Get(kube::kPods, ns_, "berth-run-" + run_id));
  }

  std::unique_ptr<LauncherWorld> world_;
  std::string ns_;
  kube::KubeClient* admin_ = nullptr;
  kube::KubeClient* client_ = nullptr;  // the launcher's, as berthd
  testenv::TestNodeAgent* agent_ = nullptr;
  OutcomeRecorder outcomes_;
  // What a launcher's thread uses lives as long as the fixture: TearDown stops it first.
  ManualClock clock_;
  std::unique_ptr<testenv::FaultInjectingKubeApi> faulty_;
  std::unique_ptr<KubernetesLauncher> launcher_;
};

TEST_F(KubernetesLauncherTest, APlanRunsInAHardenedPodAndEverythingIsCleanedUp) {
  StartLauncher();
  auto before = client_->Counts();
  ASSERT_TRUE(launcher_->Launch(Request("plan1", "plan", "hello")));
  ASSERT_TRUE(launcher_->Launch(Request("plan1", "plan", "hello")));  // adopted, not doubled
  auto outcome = outcomes_.WaitFor("plan1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(outcome->exit_code, 0);
  ASSERT_TRUE(outcome->result);
  EXPECT_EQ(outcome->result->op, "plan");
  ASSERT_TRUE(outcome->result->plan);
  EXPECT_GT(outcome->result->plan->add, 0);
  EXPECT_TRUE(PodGone("plan1"));  // on the launcher's next tick
  EXPECT_FALSE(admin_->Get(kube::kSecrets, ns_, "berth-run-plan1-token"));

  auto after = client_->Counts();
  auto delta = [&](const std::string& key) { return after[key] - before[key]; };
  EXPECT_EQ(delta("create pods"), 1u);
  EXPECT_EQ(delta("create secrets"), 1u);
  EXPECT_EQ(delta("get pods") + delta("list pods"), 0u);  // the watch told everything
  EXPECT_LE(delta("create pods") + delta("create secrets") + delta("delete pods") +
                delta("delete secrets") + delta("patch pods"),
            6u);
  EXPECT_EQ(launcher_->WatchStats().size(), 1u);
}

TEST_F(KubernetesLauncherTest, AnApplyRunsToTheEndAndReportsOutputs) {
  StartLauncher();
  ASSERT_TRUE(launcher_->Launch(Request("apply1", "apply", "hello")));
  auto outcome = outcomes_.WaitFor("apply1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(outcome->result->op, "apply");
}

TEST_F(KubernetesLauncherTest, TheTokenIsInTheSecretAndNowhereInThePod) {
  StartLauncher(*client_, Settings(), SystemClock::Instance());
  ASSERT_TRUE(launcher_->Launch(Request(
      "tok", "plan", "hello", RunnerConfigWithLabels({{"berth.test/fault", "never-start"}}))));
  auto pod = admin_->Get(kube::kPods, ns_, "berth-run-tok");
  ASSERT_TRUE(pod);
  EXPECT_EQ(pod->dump().find("secret-token-tok"), std::string::npos);
  auto secret = admin_->Get(kube::kSecrets, ns_, "berth-run-tok-token");
  ASSERT_TRUE(secret);
  EXPECT_EQ((*secret)["metadata"]["ownerReferences"][0]["uid"], (*pod)["metadata"]["uid"]);
  ASSERT_TRUE(launcher_->Cancel("tok"));
  auto outcome = outcomes_.WaitFor("tok");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kCancelled));
}

struct Fault {
  std::string label;
  RunnerEnd end;
};

class KubernetesLauncherFaults : public KubernetesLauncherTest,
                                 public ::testing::WithParamInterface<Fault> {};

TEST_P(KubernetesLauncherFaults, EndTheRunWithAClearKind) {
  StartLauncher();
  ASSERT_TRUE(launcher_->Launch(Request(
      "f", "apply", "slow", RunnerConfigWithLabels({{"berth.test/fault", GetParam().label}}))));
  auto outcome = outcomes_.WaitFor("f");
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  EXPECT_TRUE(outcome->EndedAs(GetParam().end)) << outcome->message;
  EXPECT_FALSE(outcome->message.empty());
}

INSTANTIATE_TEST_SUITE_P(Kinds, KubernetesLauncherFaults,
                         ::testing::Values(Fault{"oom", RunnerEnd::kOomKilled},
                                           Fault{"evict", RunnerEnd::kEvicted},
                                           Fault{"node-lost", RunnerEnd::kLost}),
                         [](const auto& row) { return std::string(RunnerEndName(row.param.end)); });

TEST_F(KubernetesLauncherTest, AnUnknownImageIsImagePullBackOff) {
  StartLauncher();
  ASSERT_TRUE(launcher_->Launch(
      Request("img", "plan", "hello", {{"runner", {{"image", "nowhere/none:1"}}}})));
  auto outcome = outcomes_.WaitFor("img");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kImagePullFailed)) << outcome->message;
  EXPECT_NE(outcome->message.find("nowhere/none:1"), std::string::npos);
}

TEST_F(KubernetesLauncherTest, APodThatNeverStartsIsToldThenForceDeletedAfterTheGracePeriod) {
  StartLauncher(*client_, Settings("2m"), clock_);
  ASSERT_TRUE(launcher_->Launch(Request(
      "stuck", "plan", "hello", RunnerConfigWithLabels({{"berth.test/fault", "never-start"}}))));
  clock_.Advance(std::chrono::seconds(29));
  launcher_->Tick();
  EXPECT_TRUE(outcomes_.Warnings("stuck").empty());
  clock_.Advance(std::chrono::seconds(1));
  launcher_->Tick();
  launcher_->Tick();  // said once
  auto warnings = outcomes_.Warnings("stuck");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("RunnerPending: the runner Pod is not running 30s after its launch"),
            std::string::npos)
      << warnings[0];
  clock_.Advance(std::chrono::seconds(89));
  launcher_->Tick();
  EXPECT_EQ(outcomes_.Count("stuck"), 0u);
  clock_.Advance(std::chrono::seconds(1));
  launcher_->Tick();
  auto outcome = outcomes_.WaitFor("stuck", std::chrono::seconds(5));
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kConnectionFailed));
  EXPECT_NE(outcome->message.find("within 2m (KUBERNETES_STARTUP_GRACE_PERIOD)"), std::string::npos)
      << outcome->message;
  EXPECT_FALSE(PodExists("stuck"));  // force-deleted: gone at once
}

TEST_F(KubernetesLauncherTest, AStartedPodIsNeverForceDeleted) {
  StartLauncher(*client_, Settings("1m"), clock_);
  ASSERT_TRUE(launcher_->Launch(Request("long", "apply", "slow")));
  ASSERT_TRUE(WaitUntilRunning("long"));
  // Wait for the launcher to have seen it run, then pass the grace period.
  for (int i = 0; i < 100 && agent_->PodsStarted() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  clock_.Advance(std::chrono::minutes(10));
  launcher_->Tick();
  auto outcome = outcomes_.WaitFor("long");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
}

TEST_F(KubernetesLauncherTest, CancelStopsARunningApplyGracefully) {
  StartLauncher();
  ASSERT_TRUE(launcher_->Launch(Request("stop", "apply", "slow")));
  ASSERT_TRUE(WaitUntilRunning("stop"));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // into the apply
  ASSERT_TRUE(launcher_->Cancel("stop"));
  auto outcome = outcomes_.WaitFor("stop");
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  // The runner stopped TF itself and said so in its result, not the launcher.
  EXPECT_TRUE(outcome->Cancelled() && std::holds_alternative<RunErrorKind>(outcome->failure))
      << outcome->FailureName() << ": " << outcome->message;
}

TEST_F(KubernetesLauncherTest, AFullQuotaIsRetriedAndAQuotaNeedingResourcesIsAConfigError) {
  StartLauncher(*client_, Settings("5m", /*resources=*/false), clock_);
  json quota = {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "runners"}}},
                {"spec", {{"hard", {{"pods", "0"}}}}}};
  ASSERT_TRUE(admin_->Create(kube::kResourceQuotas, ns_, quota));
  auto set_quota = [&](const std::string& pods) {
    ASSERT_TRUE(admin_->Patch(kube::kResourceQuotas, ns_, "runners", kube::PatchType::kMerge,
                              {{"spec", {{"hard", {{"pods", pods}}}}},
                               {"status", {{"hard", {{"pods", pods}}}, {"used", {{"pods", "0"}}}}}},
                              "berth-test", "status"));
  };
  set_quota("0");
  ASSERT_TRUE(launcher_->Launch(Request("q", "plan", "hello")));
  auto warnings = outcomes_.Warnings("q");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("RunnerQuotaExhausted"), std::string::npos);
  EXPECT_FALSE(PodExists("q"));
  set_quota("5");
  clock_.Advance(std::chrono::seconds(5));
  launcher_->Tick();
  auto outcome = outcomes_.WaitFor("q");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;

  // A quota on CPU requests needs every Pod to state one, which these do not: no retry helps,
  // the configuration must change.
  json needs = {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "storage"}}},
                {"spec", {{"hard", {{"limits.ephemeral-storage", "10Gi"}}}}}};
  ASSERT_TRUE(admin_->Create(kube::kResourceQuotas, ns_, needs));
  ASSERT_TRUE(admin_->Patch(
      kube::kResourceQuotas, ns_, "storage", kube::PatchType::kMerge,
      {{"status", {{"hard", {{"requests.cpu", "10"}}}, {"used", {{"requests.cpu", "0"}}}}}},
      "berth-test", "status"));
  auto refused = launcher_->Launch(Request("q2", "plan", "hello"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kFailedPrecondition) << refused.error().ToString();
  EXPECT_EQ(refused.error().reason, kube::kReasonQuotaNeedsResources);
}

TEST_F(KubernetesLauncherTest, ARunSurvivesACutWatchWithOnePod) {
  faulty_ = std::make_unique<testenv::FaultInjectingKubeApi>(*client_);
  testenv::FaultInjectingKubeApi& faulty = *faulty_;
  StartLauncher(faulty, Settings(), SystemClock::Instance());
  ASSERT_TRUE(launcher_->Launch(Request("cut", "apply", "slow")));
  ASSERT_TRUE(WaitUntilRunning("cut"));
  faulty.SetWatchesDown(true);
  faulty.CutWatches();
  // The run ends while nobody watches.
  for (int i = 0; i < 1200; ++i) {
    auto pod = admin_->Get(kube::kPods, ns_, "berth-run-cut");
    if (pod && (*pod)["status"].value("phase", "") == "Succeeded") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(outcomes_.Count("cut"), 0u);
  faulty.SetWatchesDown(false);
  auto outcome = outcomes_.WaitFor("cut");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(client_->Counts()["create pods"], 1u);
  EXPECT_EQ(outcomes_.Count("cut"), 1u);
}

TEST_F(KubernetesLauncherTest, ARestartedLauncherAdoptsItsRunsAndRemovesOthersNoneHolds) {
  StartLauncher();
  auto tracked = Request("kept", "apply", "slow");
  ASSERT_TRUE(launcher_->Launch(tracked));
  auto never_starts = RunnerConfigWithLabels({{"berth.test/fault", "never-start"}});
  ASSERT_TRUE(launcher_->Launch(Request("orphan", "plan", "hello", never_starts)));
  ASSERT_TRUE(launcher_->Launch(Request("elsewhere", "plan", "hello", never_starts)));
  ASSERT_TRUE(WaitUntilRunning("kept"));
  launcher_.reset();  // berthd goes away mid-run

  StartLauncher();
  // Run `elsewhere` is another replica's: it stays.
  ASSERT_TRUE(
      launcher_->Recover({tracked}, [](const std::string& run) { return run == "elsewhere"; }));
  EXPECT_TRUE(PodGone("orphan"));
  EXPECT_TRUE(PodExists("elsewhere"));
  auto outcome = outcomes_.WaitFor("kept");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(client_->Counts()["create pods"], 3u);  // each once
  EXPECT_EQ(outcomes_.Count("orphan"), 0u);
}

TEST_F(KubernetesLauncherTest, ARunWhosePodVanishedWhileDownIsLostNeverStartedAgain) {
  StartLauncher();
  auto tracked = Request("gone", "plan", "hello",
                         RunnerConfigWithLabels({{"berth.test/fault", "never-start"}}));
  ASSERT_TRUE(launcher_->Launch(tracked));
  launcher_.reset();
  ASSERT_TRUE(admin_->Delete(kube::kPods, ns_, "berth-run-gone", {.grace_period_seconds = 0}));
  StartLauncher();
  ASSERT_TRUE(launcher_->Recover({tracked}, [](const std::string&) { return false; }));
  auto outcome = outcomes_.WaitFor("gone", std::chrono::seconds(5));
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kLost));
  EXPECT_FALSE(PodExists("gone"));
}

TEST_F(KubernetesLauncherTest, AJobRunsItsPodOnceAndGoesWithIt) {
  StartLauncher(*client_, Settings(), SystemClock::Instance(), {.kind = WorkloadKind::kJob});
  ASSERT_TRUE(launcher_->Launch(Request("job1", "plan", "hello")));
  auto job = admin_->Get(kube::kJobs, ns_, "berth-run-job1");
  ASSERT_TRUE(job) << job.error().ToString();
  EXPECT_EQ((*job)["spec"]["backoffLimit"], 0);
  auto outcome = outcomes_.WaitFor("job1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  // The Job goes, and its Pod with it (the garbage collector follows the owner).
  for (int i = 0; i < 600 && admin_->Get(kube::kJobs, ns_, "berth-run-job1"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(admin_->Get(kube::kJobs, ns_, "berth-run-job1"));
  auto pods = admin_->List(kube::kPods, ns_, {.label_selector = "berth.dev/run=job1"});
  ASSERT_TRUE(pods);
  for (int i = 0; i < 600 && !pods->items.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pods = admin_->List(kube::kPods, ns_, {.label_selector = "berth.dev/run=job1"});
  }
  EXPECT_TRUE(pods->items.empty());
}

TEST_F(KubernetesLauncherTest, AlwaysCleanupFalseKeepsThePodAndTheReaperLeavesIt) {
  StartLauncher(*client_, Settings(), clock_, {.tick = std::chrono::hours(1)});  // Tick by hand
  ASSERT_TRUE(launcher_->Launch(
      Request("keep", "plan", "hello", {{"runner", {{"alwaysCleanup", false}}}})));
  auto outcome = outcomes_.WaitFor("keep");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded);
  clock_.Advance(std::chrono::minutes(5));  // past REAP_INTERVAL
  launcher_->Tick();
  EXPECT_TRUE(PodExists("keep"));
  // Its token is not kept.
  EXPECT_FALSE(admin_->Get(kube::kSecrets, ns_, "berth-run-keep-token"));
}

TEST_F(KubernetesLauncherTest, TheReaperRemovesFinishedPodsOfRunsNobodyTracks) {
  KubernetesLauncherOptions by_hand{.tick = std::chrono::hours(1)};  // only this test Ticks
  StartLauncher(*client_, Settings(), clock_, by_hand);
  ASSERT_TRUE(launcher_->Launch(Request("left", "plan", "hello")));
  ASSERT_TRUE(outcomes_.WaitFor("left"));
  launcher_.reset();  // before its cleanup tick: the finished Pod stays behind
  ASSERT_TRUE(PodExists("left"));
  StartLauncher(*client_, Settings(), clock_, by_hand);
  launcher_->Tick();
  EXPECT_TRUE(PodExists("left"));  // not yet: the reaper runs every REAP_INTERVAL
  clock_.Advance(std::chrono::minutes(1));
  launcher_->Tick();
  EXPECT_TRUE(PodGone("left"));
}

}  // namespace
}  // namespace berth::launch

namespace berth::launch {
namespace {

// Each runner example of the seed documents (docs/kubernetes.md has them), as a user would
// write it, launched on the test cluster: what the API accepts, a run must run with, and each
// field must reach the Pod. Where an example names what this cluster lacks (an image from a
// private registry), the run fails as a real one would, naming it: proof the field acted.
struct SeedExample {
  const char* name;
  const char* runner_configuration;  // JSON; "@NS@" stands for the test's namespace
  // The image a run cannot pull here (it fails naming it), or null: the run succeeds.
  const char* unpullable;
  // What the example must have put in the Pod's spec: a JSON subset of it.
  const char* in_spec;
};

json InNamespace(std::string text, const std::string& ns) {
  for (size_t at = text.find("@NS@"); at != std::string::npos; at = text.find("@NS@"))
    text.replace(at, 4, ns);
  return json::parse(text);
}

// Whether actual has all of subset: an object's keys (recursively), an array's elements each
// matching one of actual's, a scalar equal.
bool Contains(const json& actual, const json& subset) {
  if (subset.is_object()) {
    if (!actual.is_object()) return false;
    for (const auto& [key, value] : subset.items()) {
      if (!actual.contains(key) || !Contains(actual[key], value)) return false;
    }
    return true;
  }
  if (subset.is_array()) {
    if (!actual.is_array()) return false;
    for (const json& wanted : subset) {
      bool found = false;
      for (const json& item : actual) found = found || Contains(item, wanted);
      if (!found) return false;
    }
    return true;
  }
  return actual == subset;
}

const SeedExample kSeedExamples[] = {
    {"controller-env", R"({"runner": {"podTemplate": {"spec": {
        "env": [{"name": "TF_LOG", "value": "INFO"}, {"name": "AWS_REGION", "value": "eu-west-1"}],
        "envFrom": [{"secretRef": {"name": "aws-creds"}}]}}}})",
     nullptr,
     R"({"containers": [{"env": [{"name": "AWS_REGION", "value": "eu-west-1"}],
        "envFrom": [{"secretRef": {"name": "aws-creds"}}]}]})"},
    {"controller-scheduling", R"({"runner": {"podTemplate": {"spec": {
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "nodeSelector": {"workload": "infra"},
        "tolerations": [{"key": "infra", "operator": "Exists"}],
        "priorityClassName": "infra-runs"}}}})",
     nullptr,
     R"({"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"memory": "2Gi"}}}], "nodeSelector": {"workload": "infra"},
        "tolerations": [{"key": "infra", "operator": "Exists"}],
        "priorityClassName": "infra-runs"})"},
    {"controller-volumes", R"({"runner": {"podTemplate": {"spec": {
        "volumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca-bundle"}},
                    {"name": "providers", "emptyDir": {}}],
        "volumeMounts": [{"name": "corp-ca", "mountPath": "/etc/ssl/certs/corp-ca.crt",
                          "subPath": "ca.crt", "readOnly": true},
                         {"name": "providers", "mountPath": "/mirror"}],
        "initContainers": [{"name": "fetch-providers",
                            "image": "registry.example.com/tools/oras:latest",
                            "command": ["oras", "pull", "registry.example.com/tf/providers:2026.10",
                                        "-o", "/mirror"],
                            "volumeMounts": [{"name": "providers", "mountPath": "/mirror"}]}]}}}})",
     "registry.example.com/tools/oras:latest",
     R"({"volumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca-bundle"}}],
        "containers": [{"volumeMounts": [{"name": "corp-ca", "subPath": "ca.crt",
        "readOnly": true}]}], "initContainers": [{"name": "fetch-providers",
        "securityContext": {"runAsUser": 65532}}]})"},
    {"controller-security-context", R"({"runner": {"podTemplate": {"spec": {"securityContext": {
        "runAsNonRoot": true, "runAsUser": 65532, "readOnlyRootFilesystem": true,
        "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"}}}}}})",
     nullptr,
     R"({"containers": [{"securityContext": {"runAsUser": 65532,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}]})"},
    // Terraform's jsonencode: the template as a JSON string.
    {"orchestrator-job", R"({"job": {"namespace": "@NS@",
        "service_account": "platform-orchestrator-runner",
        "pod_template": "{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"platform-orchestrator-runner\"}}}"}})",
     nullptr, R"({"serviceAccountName": "platform-orchestrator-runner"})"},
    {"orchestrator-image", R"({"job": {"namespace": "@NS@", "pod_template": {"spec": {
        "containers": [{"name": "main",
          "image": "my-own-registry.com/platform-orchestrator/platform-orchestrator-runner:vx.y.z",
          "imagePullPolicy": "IfNotPresent"}],
        "imagePullSecrets": [{"name": "regcred"}]}}}})",
     "my-own-registry.com/platform-orchestrator/platform-orchestrator-runner:vx.y.z",
     R"({"containers": [{"imagePullPolicy": "IfNotPresent"}],
        "imagePullSecrets": [{"name": "regcred"}]})"},
};

class SeedExampleLaunch : public KubernetesLauncherTest,
                          public ::testing::WithParamInterface<SeedExample> {};

TEST_P(SeedExampleLaunch, RunsWithEveryFieldOnThePod) {
  const SeedExample& example = GetParam();
  // What the examples refer to, as their users would have made it.
  constexpr kube::ResourceKind kPriorityClasses{"scheduling.k8s.io/v1", "PriorityClass",
                                                "priorityclasses", false};
  auto priority = admin_->Create(
      kPriorityClasses, "",
      {{"metadata", {{"name", "infra-runs"}}}, {"value", 1000}, {"globalDefault", false}});
  ASSERT_TRUE(priority || priority.error().kind == ErrorKind::kAlreadyExists)
      << priority.error().ToString();
  for (const char* secret : {"aws-creds", "regcred"}) {
    json object = {{"metadata", {{"name", secret}}}, {"stringData", {{"AWS_PROFILE", "x"}}}};
    if (std::string(secret) == "regcred") {
      object = {{"metadata", {{"name", secret}}},
                {"type", "kubernetes.io/dockerconfigjson"},
                {"stringData", {{".dockerconfigjson", R"({"auths":{}})"}}}};
    }
    ASSERT_TRUE(admin_->Create(kube::kSecrets, ns_, object));
  }
  ASSERT_TRUE(admin_->Create(kube::kConfigMaps, ns_,
                             {{"metadata", {{"name", "corp-ca-bundle"}}},
                              {"data", {{"ca.crt", "-----BEGIN CERTIFICATE-----\n"}}}}));
  ASSERT_TRUE(admin_->Create(kube::kServiceAccounts, ns_,
                             {{"metadata", {{"name", "platform-orchestrator-runner"}}}}));

  // A clock that never ticks: the finished Pod stays to be read.
  StartLauncher(*client_, Settings(), clock_, {.tick = std::chrono::hours(1)});
  auto launched = launcher_->Launch(
      Request("seed", "plan", "hello", InNamespace(example.runner_configuration, ns_)));
  ASSERT_TRUE(launched) << launched.error().ToString();
  auto outcome = outcomes_.WaitFor("seed");
  ASSERT_TRUE(outcome);
  if (example.unpullable == nullptr) {
    EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  } else {
    EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kImagePullFailed)) << outcome->message;
    EXPECT_NE(outcome->message.find(example.unpullable), std::string::npos) << outcome->message;
  }
  auto pod = admin_->Get(kube::kPods, ns_, "berth-run-seed");
  ASSERT_TRUE(pod) << pod.error().ToString();
  EXPECT_TRUE(Contains((*pod)["spec"], json::parse(example.in_spec)))
      << example.in_spec << "\nis not all in\n"
      << (*pod)["spec"].dump();
  // The Pod itself is the pod template's with the run's labels: the job example's label too.
  if (std::string(example.name) == "orchestrator-job") {
    EXPECT_EQ((*pod)["metadata"]["labels"].value("app.kubernetes.io/name", ""),
              "platform-orchestrator-runner");
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SeedExampleLaunch, ::testing::ValuesIn(kSeedExamples),
                         [](const auto& row) {
                           std::string name = row.param.name;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace berth::launch
