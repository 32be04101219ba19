// The berth-controller process as an operator runs it: it watches Terraform objects (no
// polling), reconciles a new one, wakes again when its spec changes (an approval), when it is
// deleted and when what it depends on gets Ready, serves /healthz and /metrics, lists once, and
// stops cleanly on SIGTERM; all of it with exactly the rights of
// deploy/kubernetes/controller-rbac.yaml.
#include <gtest/gtest.h>

#include <thread>

#include "controller_process.h"
#include "controller_world.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-controller";

class ControllerProcessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto world = ControllerWorld::Create(kNamespace);
    ASSERT_TRUE(world) << world.error().ToString();
    shared = world->release();
    auto started =
        ControllerProcess::Start(*shared->api, shared->dir->Path(), *shared,
                                 {"--namespace=berth-system", "--watch-namespace=tf-controller",
                                  "--runner-creation-timeout=60", "--destroy-timeout=0",
                                  "--kube-api-qps=80", "--kube-api-burst=160", "--concurrency=2"},
                                 {std::string("KUBERNETES_IMAGE=") + kTestImage});
    ASSERT_TRUE(started) << started.error().ToString();
    controller = started->release();
  }
  static void TearDownTestSuite() {
    delete controller;
    delete shared;
  }

  static json WaitForReason(const std::string& name, const std::string& reason) {
    auto reached = WaitForReadyReason(*shared->api, kNamespace, name, reason);
    EXPECT_TRUE(reached) << reached.error().ToString();
    return reached ? *reached : json();
  }

  static inline ControllerWorld* shared = nullptr;
  static inline ControllerProcess* controller = nullptr;
};

TEST_F(ControllerProcessTest, ReconcilesANewObjectAndWakesOnItsApproval) {
  const fs::path world = shared->dir->Path() / "world-watched.txt";
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace,
                                  shared->FileStack("watched", kNamespace, world)));
  json pending = WaitForReason("watched", "PlanPending");
  const std::string plan = pending["status"]["plan"].value("id", "");
  ASSERT_FALSE(plan.empty()) << pending["status"].dump();
  EXPECT_FALSE(fs::exists(world));

  ASSERT_TRUE(shared->api->Patch(kTerraforms, kNamespace, "watched", kube::PatchType::kMerge,
                                 {{"spec", {{"approvePlan", plan}}}}, "test"));
  WaitForReason("watched", "Applied");
  EXPECT_TRUE(fs::exists(world));

  // The reconcile that applied is counted once it has returned.
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = controller->Metrics();
    if (metrics.find("berth_controller_reconciles_total{result=\"ok\"} 2") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(metrics.find("berth_controller_reconciles_total{result=\"ok\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("berth_controller_informer_lists_total 1\n"), std::string::npos)
      << "no list after the first sync\n"
      << metrics;
  EXPECT_NE(metrics.find("berth_kube_client_qps 80\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("berth_kube_client_burst 160\n"), std::string::npos) << metrics;
}

TEST_F(ControllerProcessTest, AnObjectOutsideTheWatchedNamespaceIsLeftAlone) {
  ASSERT_TRUE(testenv::KubeTestCluster::Shared().value()->CreateNamespace("tf-elsewhere"));
  ASSERT_TRUE(shared->api->Create(
      kTerraforms, "tf-elsewhere",
      shared->FileStack("ignored", "tf-elsewhere", shared->dir->Path() / "world-ignored.txt")));
  // The watched namespace's next object is reconciled; by then the other one would have been.
  ASSERT_TRUE(shared->api->Create(
      kTerraforms, kNamespace,
      shared->FileStack("marker", kNamespace, shared->dir->Path() / "world-marker.txt")));
  WaitForReason("marker", "PlanPending");
  auto ignored = shared->api->Get(kTerraforms, "tf-elsewhere", "ignored");
  ASSERT_TRUE(ignored);
  EXPECT_FALSE(ignored->contains("status")) << ignored->dump();
  // Its own status writes did not wake the applied object of the first test: planned again,
  // it would say NoChanges now.
  auto watched = shared->api->Get(kTerraforms, kNamespace, "watched");
  ASSERT_TRUE(watched);
  for (const json& c : (*watched)["status"]["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["reason"], "Applied") << watched->dump();
    }
  }
}

TEST_F(ControllerProcessTest, ADeletionWakesItAndAFailingDestroyLetsGoAfterTheDestroyTimeout) {
  json object =
      shared->FileStack("unsourced", kNamespace, shared->dir->Path() / "world-unsourced.txt");
  object["spec"]["git"]["ref"] = {{"branch", "no-such-branch"}};
  object["spec"]["deletionPolicy"] = "destroy";
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace, object));
  json failed = WaitForReason("unsourced", "SourceUnavailable");
  ASSERT_EQ(failed["metadata"]["finalizers"], json::array({"berth.dev/destroy"}));
  ASSERT_TRUE(shared->api->Delete(kTerraforms, kNamespace, "unsourced", {}));
  // --destroy-timeout=0: the first reconcile of the deletion gives up on the destroy.
  bool gone = false;
  for (int i = 0; i < 600 && !gone; ++i) {
    auto current = shared->api->Get(kTerraforms, kNamespace, "unsourced");
    gone = !current && current.error().kind == ErrorKind::kNotFound;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "still Terminating after a minute";
}

TEST_F(ControllerProcessTest, ADependentWakesWhenItsDependencyGetsReady) {
  json later = shared->FileStack("later", kNamespace, shared->dir->Path() / "world-later.txt");
  later["spec"]["dependsOn"] = {{{"name", "first"}}};
  later["spec"]["retryInterval"] = "1h";  // only first's readiness can wake it in time
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace, later));
  WaitForReason("later", "DependencyNotReady");
  json first = shared->FileStack("first", kNamespace, shared->dir->Path() / "world-first.txt");
  first["spec"]["approvePlan"] = "auto";
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace, first));
  WaitForReason("first", "Applied");
  WaitForReason("later", "PlanPending");
}

TEST_F(ControllerProcessTest, HealthAnswersAndSigtermStopsItCleanly) {
  auto http = net::MakeCurlHttpClient({});
  auto health = http->Send({.method = "GET", .url = controller->MetricsUrl() + "/healthz"});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto lease = shared->api->Get(kube::kLeases, "berth-system", "berth-controller");
  ASSERT_TRUE(lease) << "it reconciles only while it holds the Lease";
  EXPECT_TRUE(
      (*lease)["spec"]["holderIdentity"].get<std::string>().starts_with("berth-controller-"));
  EXPECT_EQ(controller->Stop(), 0) << controller->Log();
}

}  // namespace
}  // namespace berth::controller
