// The berth-controller process as an operator runs it: it watches Terraform objects (no
// polling), reconciles a new one, wakes again when its spec changes (an approval), when it is
// deleted and when what it depends on gets Ready, serves /healthz and /metrics, lists once, and
// stops cleanly on SIGTERM; all of it with exactly the rights of
// deploy/kubernetes/controller-rbac.yaml.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "controller_world.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "role_bound_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-controller";

std::string LsanOptions() {
  const char* options = std::getenv("LSAN_OPTIONS");
  return options == nullptr ? "" : options;
}

class ControllerProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto world = ControllerWorld::Create(kNamespace);
    ASSERT_TRUE(world) << world.error().ToString();
    shared = world->release();
    // The controller holds exactly the shipped ClusterRole: a rule missing from it fails here.
    auto bound = testenv::KubeconfigBoundToRole(
        *shared->api, testenv::SourceDir() / "deploy/kubernetes/controller-rbac.yaml",
        "berth-system");
    ASSERT_TRUE(bound) << bound.error().ToString();
    const fs::path kubeconfig = shared->dir->Path() / "controller.kubeconfig";
    ASSERT_TRUE(sys::WriteFileAtomic(kubeconfig, *bound));
    sys::SpawnOptions options;
    options.argv = {BERTH_CONTROLLER_BIN,
                    "--namespace=berth-system",
                    "--watch-namespace=tf-controller",
                    "--metrics-address=127.0.0.1",
                    "--metrics-port=0",
                    "--runner-creation-timeout=60",
                    "--destroy-timeout=0",
                    "--kube-api-qps=80",
                    "--kube-api-burst=160",
                    "--concurrency=2"};
    options.env = std::vector<std::string>{"KUBECONFIG=" + kubeconfig.string(),
                                           std::string("KUBERNETES_IMAGE=") + kTestImage,
                                           "PATH=/usr/bin:/bin",
                                           // the sanitizer build's leak check knows libgit2's
                                           "LSAN_OPTIONS=" + LsanOptions()};
    options.pipe_output = true;
    auto child = sys::Subprocess::Spawn(options);
    ASSERT_TRUE(child) << child.error().ToString();
    controller = new sys::Subprocess(std::move(*child));
    std::string seen;
    const std::string marker = "serving metrics on 127.0.0.1:";
    char buffer[4096];
    while (seen.find(marker) == std::string::npos || seen.back() != '\n') {
      ssize_t n = ::read(controller->OutputFd(), buffer, sizeof buffer);
      ASSERT_GT(n, 0) << seen;
      seen.append(buffer, static_cast<size_t>(n));
    }
    metrics_url =
        new std::string("http://127.0.0.1:" +
                        std::to_string(std::stoi(seen.substr(seen.find(marker) + marker.size()))));
  }
  static void TearDownTestSuite() {
    delete controller;
    delete metrics_url;
    delete shared;
  }

  // Watches the object until its Ready condition has this reason.
  static json WaitForReason(const std::string& name, const std::string& reason) {
    json last;
    auto until = [&](const json& object) {
      last = object;
      const json status = object.value("status", json::object());
      for (const json& c : status.value("conditions", json::array()))
        if (c["type"] == "Ready" && c["reason"] == reason) return true;
      return false;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (std::chrono::steady_clock::now() < deadline) {
      auto current = shared->api->Get(kTerraforms, kNamespace, name);
      if (current && until(*current)) return *current;
      bool reached = false;
      auto watched = shared->api->Watch(
          kTerraforms, kNamespace,
          {.field_selector = "metadata.name=" + name,
           .resource_version = current ? (*current)["metadata"].value("resourceVersion", "") : "",
           .timeout_seconds = 30},
          [&](const kube::WatchEvent& event) {
            reached = event.type != "BOOKMARK" && until(event.object);
            return !reached;
          },
          [&] { return std::chrono::steady_clock::now() > deadline; });
      if (reached) return last;
    }
    ADD_FAILURE() << name << " never reached " << reason << ": " << last.dump();
    return last;
  }

  static std::string Metrics() {
    auto http = net::MakeCurlHttpClient({});
    auto response = http->Send({.method = "GET", .url = *metrics_url + "/metrics"});
    EXPECT_TRUE(response) << response.error().ToString();
    return response ? response->body : "";
  }

  static inline ControllerWorld* shared = nullptr;
  static inline sys::Subprocess* controller = nullptr;
  static inline std::string* metrics_url = nullptr;
};

TEST_F(ControllerProcess, ReconcilesANewObjectAndWakesOnItsApproval) {
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
    metrics = Metrics();
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

TEST_F(ControllerProcess, AnObjectOutsideTheWatchedNamespaceIsLeftAlone) {
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

TEST_F(ControllerProcess, ADeletionWakesItAndAFailingDestroyLetsGoAfterTheDestroyTimeout) {
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

TEST_F(ControllerProcess, ADependentWakesWhenItsDependencyGetsReady) {
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

TEST_F(ControllerProcess, HealthAnswersAndSigtermStopsItCleanly) {
  auto http = net::MakeCurlHttpClient({});
  auto health = http->Send({.method = "GET", .url = *metrics_url + "/healthz"});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto lease = shared->api->Get(kube::kLeases, "berth-system", "berth-controller");
  ASSERT_TRUE(lease) << "it reconciles only while it holds the Lease";
  EXPECT_TRUE(
      (*lease)["spec"]["holderIdentity"].get<std::string>().starts_with("berth-controller-"));
  controller->Signal(SIGTERM);
  const int code = controller->Wait();
  std::string said;
  char buffer[4096];
  for (ssize_t n; (n = ::read(controller->OutputFd(), buffer, sizeof buffer)) > 0;)
    said.append(buffer, static_cast<size_t>(n));
  EXPECT_EQ(code, 0) << said;
}

}  // namespace
}  // namespace berth::controller
