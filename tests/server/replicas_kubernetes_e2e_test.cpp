// Two real berthd processes on one real PostgreSQL launching their runs as Pods on the test
// cluster (a kubernetes runner, the test node agent running the Pods): the replica whose run is
// mid-apply is killed with SIGKILL; once its lease has ended the other adopts the run, watches
// its Pod, and the deployment completes, applied once in its one Pod, with its whole log. Pods
// reach berthd through one advertised address, as behind a load balancer: a socat forwarder the
// test points at the survivor, as a load balancer's health check would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "berthds_on_postgres.h"
#include "launcher_world.h"
#include "loopback.h"
#include "role_bound_client.h"

namespace berth::server {
namespace {

using nlohmann::json;

class ReplicasOnKubernetes : public BerthdsOnPostgres {
 protected:
  void SetUp() override {
    BerthdsOnPostgres::SetUp();
    if (HasFatalFailure()) return;
    auto world =
        launch::LauncherWorld::Create(launch::LauncherWorld::NamespaceForThisTest("replicas-kube"));
    ASSERT_TRUE(world) << world.error().ToString();
    world_ = std::move(*world);
    auto kubeconfig = testenv::KubeconfigBoundToRole(
        world_->Admin(), testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml",
        world_->Namespace());
    ASSERT_TRUE(kubeconfig) << kubeconfig.error().ToString();
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "kubeconfig", *kubeconfig));
    auto port = testenv::FreeLoopbackPort();
    ASSERT_TRUE(port);
    balancer_port_ = *port;
    more_flags_ = {"--kubernetes",
                   "--advertise-url=http://127.0.0.1:" + std::to_string(balancer_port_)};
    more_env_ = {"KUBECONFIG=" + (dir_->Path() / "kubeconfig").string(),
                 "KUBERNETES_IMAGE=" + world_->Image(),
                 "KUBERNETES_NAMESPACE=" + world_->Namespace(), "KUBERNETES_CPU=100m",
                 "KUBERNETES_MEMORY=256Mi"};
    runner_configuration_ =
        json{{"type", "kubernetes"}, {"job", {{"namespace", world_->Namespace()}}}}.dump();
  }

  void TearDown() override {
    if (balancer_) {
      balancer_->Signal(SIGTERM);
      balancer_->Wait();
    }
    BerthdsOnPostgres::TearDown();
  }

  // The advertised address now forwards to replica i (the previous forwarder stops first).
  void BalanceTo(int i) {
    if (balancer_) {
      balancer_->Signal(SIGTERM);
      balancer_->Wait();
    }
    std::string url = Replica(i).Url();
    auto balancer = sys::Subprocess::Spawn(
        {.argv = {"/usr/bin/socat",
                  "TCP-LISTEN:" + std::to_string(balancer_port_) + ",bind=127.0.0.1,reuseaddr,fork",
                  "TCP:" + url.substr(url.find("://") + 3)},
         .output_path = (dir_->Path() / "balancer.log").string()});
    ASSERT_TRUE(balancer) << balancer.error().ToString();
    balancer_.emplace(std::move(*balancer));
    auto http = net::MakeCurlHttpClient();
    auto up = testenv::WaitUntilReady(
        "socat", *balancer_,
        [&] {
          auto r = http->Send(
              {.url = "http://127.0.0.1:" + std::to_string(balancer_port_) + "/healthz"});
          return r && r->status == 200;
        },
        std::chrono::seconds(30), (dir_->Path() / "balancer.log").string());
    ASSERT_TRUE(up) << up.error().ToString();
  }

  std::unique_ptr<launch::LauncherWorld> world_;
  int balancer_port_ = 0;
  std::optional<sys::Subprocess> balancer_;
};

TEST_F(ReplicasOnKubernetes, AReplicaKilledMidApplyLeavesItsPodRunToTheOtherWhichCompletesIt) {
  StartReplicas(2, 1);
  if (HasFatalFailure()) return;
  BalanceTo(0);
  std::string id =
      Api(0).Deploy(Slow(), {{"op", "apply"}, {"variables", {{"seconds", 8}}}}, "web/e0");
  json applying = WaitUntilApplying(0, id);
  const int owner = OwnerOf(applying), survivor = 1 - owner;
  ASSERT_GE(owner, 0) << applying.dump(2);

  Replica(owner).Kill();  // its machine is gone; the Pod runs on in the cluster
  BalanceTo(survivor);
  json done = Api(survivor).WaitFor(id, {"succeeded", "failed", "cancelled"});
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << Api(survivor).Log(id);
  EXPECT_EQ(OwnerOf(done), survivor);
  std::string log = Api(survivor).Log(id);
  EXPECT_EQ(Creates(log), 1) << log;
  EXPECT_NE(log.find("Apply complete!"), std::string::npos) << log;
  EXPECT_EQ(world_->Agent().PodsStarted(), 1);
  EXPECT_NE(done.dump().find("RunTakenOver"), std::string::npos) << done.dump(2);
  EXPECT_TRUE(State(survivor, "e0")["lock"].is_null());
}

// A real berthd checks a kubernetes runner's cluster as a launch reaches it: in the runner's
// namespace it is the launcher's account with every right; in a namespace no Role grants it,
// the check names each right it lacks and fails; a runner naming a context of its
// organization's kubeconfig (--clusters-dir) is checked through that context. Nothing is
// launched.
TEST_F(ReplicasOnKubernetes, ARunnersCheckSaysWhoBerthdIsThereAndWhichRightsItLacks) {
  // Organization default's own folder of --clusters-dir: a kubeconfig whose one context, "test",
  // is this same cluster as the launcher's account.
  const auto clusters = dir_->Path() / "clusters";
  std::filesystem::create_directories(clusters / "default");
  ASSERT_TRUE(sys::WriteFileAtomic(clusters / "default/kubeconfig",
                                   *sys::ReadFile(dir_->Path() / "kubeconfig")));
  more_flags_.push_back("--clusters-dir=" + clusters.string());
  StartReplicas(1, 0);
  if (HasFatalFailure()) return;
  // A kubernetes runner in namespace ns, naming context (empty: berthd's own cluster).
  auto save = [&](const std::string& id, const std::string& ns, const std::string& context) {
    json configuration = {{"type", "kubernetes"}, {"job", {{"namespace", ns}}}};
    if (!context.empty()) configuration["cluster"] = {{"kubeconfig_context", context}};
    return Api(0).Call("POST", "/runners",
                       json{{"id", id},
                            {"runner_configuration", configuration},
                            {"state_storage_configuration", {{"type", "berth"}}}}
                           .dump());
  };
  auto check = [&](const std::string& id) {
    auto checked = Api(0).Call("POST", "/runners/" + id + "/check", "");
    EXPECT_EQ(checked.status, 200) << checked.body;
    return json::parse(checked.body, nullptr, false);
  };
  const std::string launcher = "system:serviceaccount:" + world_->Namespace() + ":berthd";
  json answer = check("here");
  EXPECT_EQ(answer["ok"], true) << answer.dump(2);
  EXPECT_EQ(answer["user"], launcher);
  EXPECT_EQ(answer["missing"], json::array());

  auto saved = save("elsewhere", "default", "");
  ASSERT_EQ(saved.status, 201) << saved.body;
  answer = check("elsewhere");
  EXPECT_EQ(answer["ok"], false) << answer.dump(2);
  EXPECT_EQ(answer["error"], "");
  EXPECT_NE(answer["missing"].dump().find("create pods"), std::string::npos) << answer.dump(2);

  // A runner naming a context of its organization's kubeconfig is saved and checked through it;
  // one naming a context that kubeconfig lacks is refused, naming the field.
  saved = save("by-context", world_->Namespace(), "test");
  ASSERT_EQ(saved.status, 201) << saved.body;
  answer = check("by-context");
  EXPECT_EQ(answer["ok"], true) << answer.dump(2);
  EXPECT_EQ(answer["cluster"], "kubeconfig context test");
  EXPECT_EQ(answer["user"], launcher);
  auto absent = save("absent", world_->Namespace(), "staging");
  EXPECT_EQ(absent.status, 409) << absent.body;
  EXPECT_NE(absent.body.find("$.runner_configuration.cluster.kubeconfig_context"),
            std::string::npos)
      << absent.body;
  EXPECT_EQ(world_->Agent().PodsStarted(), 0);
}

}  // namespace
}  // namespace berth::server
