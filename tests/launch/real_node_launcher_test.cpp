// The Kubernetes launcher on a real node (tests/env/real_node.h): kubelet, containerd and runc
// run scripts/images' berth/runner (with examples under /berth) pulled from the test registry,
// in a namespace that enforces Pod Security `restricted`. What the test node agent can only
// pretend is real here: the init container's copy, the read-only root and UID 65532, a memory
// limit's OOMKill, a registry miss.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "launch/kubernetes/kubernetes_launcher.h"
#include "launcher_world.h"
#include "outcome_recorder.h"
#include "real_node.h"
#include "sys/files.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RealNodeLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string ns = LauncherWorld::NamespaceForThisTest("real-");
    auto world = LauncherWorld::Create(ns, LauncherWorld::Node::kReal);
    ASSERT_TRUE(world) << world.error().ToString();
    world_ = std::move(*world);
    launcher_ = std::make_unique<KubernetesLauncher>(world_->LauncherClient(), world_->Settings(),
                                                     SystemClock::Instance(), outcomes_,
                                                     KubernetesLauncherOptions{});
    auto started = launcher_->Start();
    ASSERT_TRUE(started) << started.error().ToString();
  }
  void TearDown() override { launcher_.reset(); }

  std::optional<RunOutcome> RunToEnd(const std::string& run_id, const std::string& op,
                                     const std::string& module, json runner_config = {}) {
    if (runner_config.is_null()) runner_config = json::object();
    auto launched = launcher_->Launch(world_->Request(run_id, op, module, runner_config));
    EXPECT_TRUE(launched) << launched.error().ToString();
    return outcomes_.WaitFor(run_id);
  }

  std::unique_ptr<LauncherWorld> world_;
  OutcomeRecorder outcomes_;
  std::unique_ptr<KubernetesLauncher> launcher_;
};

// The runner's process as the kernel sees it.
struct SeenProcess {
  std::string uid_line;
  bool root_read_only = false;
};

// A process may end while it is read: then it is not the one (sys::ReadFile says so).
std::optional<SeenProcess> FindRunnerProcess() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    auto args = sys::ReadFile(entry.path() / "cmdline");
    if (!args || !args->starts_with(std::string("/berth/bin/runner\0run", 21))) continue;
    auto status = sys::ReadFile(entry.path() / "status");
    auto mountinfo = sys::ReadFile(entry.path() / "mountinfo");
    if (!status || !mountinfo) continue;
    SeenProcess seen;
    std::istringstream status_lines(*status);
    for (std::string line; std::getline(status_lines, line);) {
      if (line.starts_with("Uid:")) seen.uid_line = line;
    }
    std::istringstream mount_lines(*mountinfo);
    for (std::string line; std::getline(mount_lines, line);) {
      // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...": the container's own root.
      std::istringstream fields(line);
      std::string id, parent, dev, root, point, options;
      fields >> id >> parent >> dev >> root >> point >> options;
      if (point == "/") seen.root_read_only = options.starts_with("ro");
    }
    return seen;
  }
  return std::nullopt;
}

TEST_F(RealNodeLauncherTest, APlanAndAnApplyRunInTheRunnerImageReadOnlyAsUid65532) {
  ASSERT_TRUE(launcher_->Launch(world_->Request("plan", "plan", "hello", json::object())));
  // The runner as the kernel sees it while it plans (the runner image has no shell to ask).
  std::optional<SeenProcess> seen;
  for (int i = 0; i < 3000 && !seen; ++i) {
    seen = FindRunnerProcess();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(seen) << "the runner never ran in a container";
  EXPECT_EQ(seen->uid_line, "Uid:\t65532\t65532\t65532\t65532");
  EXPECT_TRUE(seen->root_read_only);
  auto plan = outcomes_.WaitFor("plan");
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->succeeded) << plan->FailureName() << ": " << plan->message;
  ASSERT_TRUE(plan->result && plan->result->plan);
  EXPECT_EQ(plan->result->plan->add, 1);

  auto apply = RunToEnd("apply", "apply", "hello");
  ASSERT_TRUE(apply);
  EXPECT_TRUE(apply->succeeded) << apply->FailureName() << ": " << apply->message;
  ASSERT_TRUE(apply->result && apply->result->outputs);
  EXPECT_EQ(apply->result->outputs->size(), 1U);
}

// A plan that needs hundreds of MiB under a 64Mi limit: the kernel kills it, and kubelet says
// OOMKilled (a small module under a small limit may just fit, with the binary's pages dropped).
TEST_F(RealNodeLauncherTest, AMemoryLimitTooSmallForThePlanIsARealOomKill) {
  json small = {{"runner",
                 {{"podTemplate",
                   {{"spec",
                     {{"resources",
                       {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}},
                        {"limits", {{"memory", "64Mi"}}}}}}}}}}}};
  auto outcome = RunToEnd("oom", "plan", "hungry", small);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kOomKilled))
      << outcome->FailureName() << ": " << outcome->message;
}

TEST_F(RealNodeLauncherTest, AnImageTheRegistryDoesNotHaveIsImagePullBackOff) {
  auto node = testenv::RealNode::Shared();
  ASSERT_TRUE(node);
  std::string missing = (*node)->Registry() + "/berth/nothing:here";
  auto outcome = RunToEnd("miss", "plan", "hello", {{"runner", {{"image", missing}}}});
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kImagePullFailed))
      << outcome->FailureName() << ": " << outcome->message;
  EXPECT_NE(outcome->message.find(missing), std::string::npos) << outcome->message;
}

// The launcher seed's concern: with pull policy Always a tag moved to another image is pulled
// again at the next run, and each run records the digest it actually ran.
TEST_F(RealNodeLauncherTest, AMovedTagIsPulledAgainAndEachRunRecordsTheDigestItRan) {
  auto node = testenv::RealNode::Shared();
  ASSERT_TRUE(node);
  KubernetesSettings settings = world_->Settings();
  settings.image_pull_policy = "Always";
  std::vector<std::string> ran;
  for (const char* marker : {"first", "second"}) {
    auto pushed = PushRunnerWithModules(**node, "moving", marker);
    ASSERT_TRUE(pushed) << pushed.error().ToString();
    settings.image = pushed->reference;
    launcher_ = std::make_unique<KubernetesLauncher>(world_->LauncherClient(), settings,
                                                     SystemClock::Instance(), outcomes_,
                                                     KubernetesLauncherOptions{});
    ASSERT_TRUE(launcher_->Start());
    std::string run_id = std::string("moved-") + marker;
    auto outcome = RunToEnd(run_id, "plan", "hello");
    ASSERT_TRUE(outcome);
    EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
    EXPECT_TRUE(outcome->image_id.ends_with("@" + pushed->digest))
        << outcome->image_id << " ran, " << pushed->digest << " was pushed";
    ran.push_back(outcome->image_id);
    launcher_.reset();
  }
  EXPECT_NE(ran[0], ran[1]);
}

}  // namespace
}  // namespace berth::launch
