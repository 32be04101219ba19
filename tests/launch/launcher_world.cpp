#include "launcher_world.h"

#include <gtest/gtest.h>

#include "kube_test_cluster.h"
#include "real_node.h"
#include "role_bound_client.h"
#include "test_tools.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<sys::TempDir> BuildImage() {
  auto dir = sys::TempDir::Create("runner-image");
  if (!dir) return dir.error();
  auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
  if (!tofu) return tofu.error();
  fs::create_directories(dir->Path() / "usr/local/bin");
  fs::create_symlink(*tofu, dir->Path() / "usr/local/bin/tofu");
  fs::create_symlink(BERTH_RUNNER_BIN, dir->Path() / "runner");
  fs::create_directories(dir->Path() / "berth/modules");
  for (const char* module : {"hello", "slow"}) {
    fs::copy(testenv::SourceDir() / "examples" / module, dir->Path() / "berth/modules" / module,
             fs::copy_options::recursive);
  }
  if (auto ok = sys::WriteFileAtomic(dir->Path() / "berth/slow.json", R"({"seconds": 4})"); !ok)
    return ok.error();
  return dir;
}

Result<void> Check(const Result<json>& result) {
  if (!result) return result.error();
  return {};
}

}  // namespace

std::string LauncherWorld::NamespaceForThisTest(const std::string& prefix) {
  std::string ns = prefix;
  for (char c : std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    if (ns.size() < 60 && std::isalnum(static_cast<unsigned char>(c)) != 0)
      ns += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return ns;
}

Result<std::unique_ptr<LauncherWorld>> LauncherWorld::Create(const std::string& ns, Node node,
                                                             testenv::KubeTestCluster* on) {
  auto cluster =
      on != nullptr ? Result<testenv::KubeTestCluster*>(on) : testenv::KubeTestCluster::Shared();
  if (!cluster) return cluster.error();
  std::unique_ptr<LauncherWorld> world(new LauncherWorld(ns));
  auto admin = (*cluster)->AdminClient();
  if (!admin) return admin.error();
  world->admin_ = std::move(*admin);
  testenv::RealNode* real = nullptr;
  if (node == Node::kReal) {
    auto shared = testenv::RealNode::Shared();
    if (!shared) return shared.error();
    real = *shared;
    static const Result<testenv::PushedImage> kPushed = PushRunnerWithModules(*real, "modules", "");
    if (!kPushed) return kPushed.error();
    world->image_ref_ = kPushed->reference;
    if (auto r = real->PrepareNamespace(*world->admin_, ns); !r) return r.error();
  } else if (auto r = (*cluster)->CreateNamespace(ns); !r) {
    return r.error();
  }
  if (auto r = Check(world->admin_->Patch(
          kube::kNamespaces, "", ns, kube::PatchType::kMerge,
          {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "restricted"}}}}}},
          "berth-test"));
      !r)
    return r.error();
  if (auto r = world->GrantLauncherRole(**cluster); !r) return r.error();
  if (real) return world;
  auto image = BuildImage();
  if (!image) return image.error();
  auto work = sys::TempDir::Create("node-agent");
  if (!work) return work.error();
  auto agent = testenv::TestNodeAgent::Start(
      *world->admin_, {.images = {{kImage, image->Path()}}, .work_dir = work->Path()});
  if (!agent) return agent.error();
  world->image_.emplace(std::move(*image));
  world->work_.emplace(std::move(*work));
  world->agent_ = std::move(*agent);
  return world;
}

Result<void> LauncherWorld::GrantLauncherRole(const testenv::KubeTestCluster& cluster) {
  auto client = testenv::ClientBoundToRole(
      *admin_, testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml", ns_, &cluster);
  if (!client) return client.error();
  launcher_client_ = std::move(*client);
  return {};
}

// scripts/images' berth/runner with examples/hello and a memory-hungry module under /berth
// (the slow module's local-exec needs a shell, which the image does not have), and the marker
// at /berth/marker.
Result<testenv::PushedImage> PushRunnerWithModules(const testenv::RealNode& node,
                                                   const std::string& tag,
                                                   const std::string& marker) {
  auto work = sys::TempDir::Create("runner-image-layer");
  if (!work) return work.error();
  const fs::path layer = work->Path();
  fs::create_directories(layer / "modules");
  fs::copy(testenv::SourceDir() / "examples/hello", layer / "modules/hello",
           fs::copy_options::recursive);
  constexpr fs::perms kReadable = fs::perms::owner_read | fs::perms::owner_write |
                                  fs::perms::group_read | fs::perms::others_read;
  // A module whose plan needs hundreds of MiB (a million strings), for memory limits.
  fs::create_directories(layer / "modules/hungry");
  if (auto written = sys::WriteFileAtomic(
          layer / "modules/hungry/main.tf",
          "output \"size\" {\n  value = length(flatten([for i in range(1000) : "
          "[for j in range(1000) : \"${i}-${j}\"]]))\n}\n",
          kReadable);
      !written)
    return written.error();
  if (auto written = sys::WriteFileAtomic(layer / "marker", marker, kReadable); !written)
    return written.error();
  return node.PushRunnerWith(layer, tag);
}

KubernetesSettings LauncherWorld::Settings(const std::string& grace, bool resources) const {
  kube::Environment env = {{"KUBERNETES_IMAGE", image_ref_},
                           {"KUBERNETES_NAMESPACE", ns_},
                           {"KUBERNETES_STARTUP_GRACE_PERIOD", grace}};
  if (resources) {
    env["KUBERNETES_CPU"] = "100m";
    env["KUBERNETES_MEMORY"] = "256Mi";
  }
  return KubernetesSettings::FromEnvironment(env).value();
}

LaunchRequest LauncherWorld::Request(const std::string& run_id, const std::string& op,
                                     const std::string& module, json runner_config) const {
  LaunchRequest request{.run_id = run_id, .revision = "1", .token = "secret-token-" + run_id};
  request.invocation = {.op = op, .module = "/berth/modules/" + module};
  if (module == "slow") request.invocation.config = "/berth/slow.json";
  // Any shape a user writes (a runner's job, the controller's spec.runner), as its launcher
  // gets it.
  auto pod = RunnerPodConfig::Parse(std::move(runner_config));
  EXPECT_TRUE(pod) << pod.error().ToString();
  request.runner = KubernetesRunnerSettings{.pod = pod ? *pod : RunnerPodConfig{}};
  return request;
}

}  // namespace berth::launch
