// berth-controller with its runner Pods on the real node (tests/env/real_node.h): kubelet,
// containerd and runc run scripts/images' berth/runner, pulled from the test registry, in a
// namespace that enforces Pod Security `restricted`. The controller dials each Pod's IP on the
// Pod bridge with mutual TLS; tofu in the Pod keeps the state through the controller's state
// service (at the bridge's address, with a token for its own object only), which writes the
// Secret: the Pod gets no API token at all. The file
// stack's world is a file in the runner Pod's /tmp, which the test reaches through kubelet's
// emptyDir folder on the node.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "controller/terraform_object.h"
#include "controller_process.h"
#include "controller_world.h"
#include "core/base64.h"
#include "sys/files.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-real";
constexpr char kWorld[] = "/tmp/world.txt";  // in the runner Pod

std::string Content(const fs::path& file) {
  auto text = sys::ReadFile(file);
  return text ? *text : "(" + text.error().ToString() + ")";
}

class ControllerOnARealNode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto world = ControllerWorld::Create(kNamespace, ControllerWorld::Node::kReal);
    ASSERT_TRUE(world) << world.error().ToString();
    shared = world->release();
    auto started = ControllerProcess::Start(
        *shared->api, shared->dir->Path(), *shared,
        {"--namespace=berth-system", std::string("--watch-namespace=") + kNamespace,
         "--runner-creation-timeout=240", "--concurrency=2"},
        {"KUBERNETES_IMAGE=" + shared->image_ref});
    ASSERT_TRUE(started) << started.error().ToString();
    controller = started->release();
  }
  static void TearDownTestSuite() {
    delete controller;
    delete shared;
  }

  // A first Pod pulls the image and starts containerd's shims: minutes on a loaded machine.
  static json WaitForReason(const std::string& name, const std::string& reason) {
    auto reached =
        WaitForReadyReason(*shared->api, kNamespace, name, reason, std::chrono::minutes(5));
    // Nothing after a missed step can pass: the test ends here, with what the controller said.
    if (!reached)
      throw std::runtime_error(reached.error().ToString() + "\nberth-controller said:\n" +
                               controller->Log());
    return *reached;
  }

  static void Approve(const std::string& name, const json& pending) {
    const std::string plan = pending["status"]["plan"].value("id", "");
    ASSERT_FALSE(plan.empty()) << pending.dump();
    ASSERT_TRUE(shared->api->Patch(kTerraforms, kNamespace, name, kube::PatchType::kMerge,
                                   {{"spec", {{"approvePlan", plan}}}}, "test"));
  }

  static std::string RunnerPodUid(const std::string& name) {
    auto pod = shared->api->Get(kube::kPods, kNamespace, name + "-tf-runner");
    EXPECT_TRUE(pod) << pod.error().ToString();
    return pod ? (*pod)["metadata"].value("uid", "") : "";
  }

  // The world file as the runner Pod's /tmp holds it on the node.
  static fs::path WorldOnNode(const std::string& pod_uid) {
    return shared->real_node->EmptyDirOf(pod_uid, "tmp") / fs::path(kWorld).filename();
  }

  static inline ControllerWorld* shared = nullptr;
  static inline ControllerProcess* controller = nullptr;
};

TEST_F(ControllerOnARealNode, AFreshPodAppliesKeepsTheStateInASecretAndGoes) {
  json object = shared->FileStack("fresh", kNamespace, kWorld);
  object["spec"]["approvePlan"] = "auto";
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace, object));
  json applied = WaitForReason("fresh", "Applied");
  std::cout << "fresh Pod, first reconcile (image pull included): "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";
  EXPECT_EQ(applied["status"]["binary"].value("name", ""), "tofu") << applied["status"].dump();

  // tofu in the Pod wrote the state with the Pod's own ServiceAccount.
  auto state = shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-fresh");
  ASSERT_TRUE(state) << state.error().ToString();
  auto outputs = shared->api->Get(kube::kSecrets, kNamespace, "fresh-outputs");
  ASSERT_TRUE(outputs) << outputs.error().ToString();
  auto id = Base64Decode((*outputs)["data"].value("id", ""));
  EXPECT_TRUE(id && !id->empty()) << "the file's id, as tofu output it: " << outputs->dump();

  // alwaysCleanup (the default): the Pod goes once its run is over.
  bool gone = false;
  for (int i = 0; i < 600 && !gone; ++i) {
    auto pod = shared->api->Get(kube::kPods, kNamespace, "fresh-tf-runner");
    gone = !pod && pod.error().kind == ErrorKind::kNotFound;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "fresh-tf-runner is still there a minute after its run";
}

TEST_F(ControllerOnARealNode, AKeptPodWaitsForApprovalAppliesReportsDriftAndDestroys) {
  json object = shared->FileStack("kept", kNamespace, kWorld, {{"alwaysCleanup", false}});
  object["spec"]["interval"] = "3s";  // drift detection plans again every 3 s
  ASSERT_TRUE(shared->api->Create(kTerraforms, kNamespace, object));

  json pending = WaitForReason("kept", "PlanPending");
  const std::string pod = RunnerPodUid("kept");
  ASSERT_FALSE(pod.empty());
  const fs::path world = WorldOnNode(pod);
  EXPECT_FALSE(fs::exists(world)) << "applied before its approval";
  // No API token reached the Pod: the ServiceAccount admission added no token volume, and
  // kubelet projected none onto the node; what the module runs can read no Secret.
  auto spec = shared->api->Get(kube::kPods, kNamespace, "kept-tf-runner");
  ASSERT_TRUE(spec);
  EXPECT_EQ((*spec)["spec"].value("automountServiceAccountToken", true), false);
  for (const json& volume : (*spec)["spec"].value("volumes", json::array()))
    EXPECT_FALSE(volume.contains("projected")) << volume.dump();
  const fs::path volumes = world.parent_path().parent_path().parent_path();
  EXPECT_TRUE(fs::exists(volumes / "kubernetes.io~empty-dir")) << volumes;
  EXPECT_FALSE(fs::exists(volumes / "kubernetes.io~projected")) << "a token was projected";

  const auto approved = std::chrono::steady_clock::now();
  Approve("kept", pending);
  WaitForReason("kept", "Applied");
  std::cout << "kept Pod, approval to applied: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - approved)
                   .count()
            << " ms\n";
  EXPECT_EQ(Content(world), "from git");
  WaitForReason("kept", "NoChanges");  // planned again in the same Pod: nothing moved
  EXPECT_EQ(RunnerPodUid("kept"), pod) << "the kept Pod was replaced";

  // The world moves behind tofu's back (in place: the file stays the Pod user's).
  { std::ofstream(world, std::ios::trunc) << "tampered"; }
  json drifted = WaitForReason("kept", "DriftDetected");
  EXPECT_EQ(Content(world), "tampered") << "corrected without approval";
  Approve("kept", drifted);
  WaitForReason("kept", "Applied");
  EXPECT_EQ(Content(world), "from git");

  ASSERT_TRUE(shared->api->Patch(kTerraforms, kNamespace, "kept", kube::PatchType::kMerge,
                                 {{"spec", {{"destroy", true}}}}, "test"));
  json destroy = WaitForReason("kept", "PlanPending");
  EXPECT_EQ(destroy["status"]["plan"].value("operation", ""), "destroy") << destroy.dump();
  EXPECT_TRUE(fs::exists(world)) << "destroyed before its approval";
  Approve("kept", destroy);
  WaitForReason("kept", "Destroyed");
  EXPECT_FALSE(fs::exists(world));
  EXPECT_EQ(RunnerPodUid("kept"), pod) << "every run of the object used the one kept Pod";
}

}  // namespace
}  // namespace berth::controller
