// A real berthd launching its runs as Pods on the test cluster (a kubernetes runner) whose
// kube-apiserver goes away mid-apply and comes back (an upgrade, a restart): berthd's watches
// end and every call fails for a while; the run goes on in its one Pod, berthd finds it again,
// and the deployment ends well with its whole log, applied once.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "berthd_process.h"
#include "kube_test_cluster.h"
#include "launcher_world.h"
#include "role_bound_client.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {
namespace {

using nlohmann::json;

TEST(ApiserverOutageE2e, AnApiserverAwayMidApplyLeavesTheRunInItsPodAndTheDeploymentEndsWell) {
  auto world = launch::LauncherWorld::Create(
      launch::LauncherWorld::NamespaceForThisTest("apiserver-outage"));
  ASSERT_TRUE(world) << world.error().ToString();
  auto cluster = testenv::KubeTestCluster::Shared();
  ASSERT_TRUE(cluster);
  auto dir = sys::TempDir::Create("apiserver-outage");
  ASSERT_TRUE(dir);
  auto kubeconfig = testenv::KubeconfigBoundToRole(
      (*world)->Admin(), testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml",
      (*world)->Namespace());
  ASSERT_TRUE(kubeconfig) << kubeconfig.error().ToString();
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "kubeconfig", *kubeconfig));
  BerthdProcess berthd(dir->Path(), "data");
  ASSERT_TRUE(berthd.Start(
      {"--rate-limit=0", "--kubernetes"},
      {"KUBECONFIG=" + (dir->Path() / "kubeconfig").string(),
       "KUBERNETES_IMAGE=" + (*world)->Image(), "KUBERNETES_NAMESPACE=" + (*world)->Namespace(),
       "KUBERNETES_CPU=100m", "KUBERNETES_MEMORY=256Mi"}));
  auto http = net::MakeCurlHttpClient();
  BerthdClient api{berthd.Url(), berthd.AdminToken(), http.get()};
  api.CreateWebDev({{"type", "kubernetes"}, {"job", {{"namespace", (*world)->Namespace()}}}});
  if (::testing::Test::HasFailure()) return;

  std::string id = api.Deploy(testenv::SourceDir() / "examples/slow",
                              {{"op", "apply"}, {"variables", {{"seconds", 20}}}});
  ASSERT_TRUE(api.WaitForLog(id, "berth-slow-started")) << api.Log(id);
  (*cluster)->StopApiserver();
  std::this_thread::sleep_for(std::chrono::seconds(5));  // berthd's calls fail meanwhile
  auto back = (*cluster)->StartApiserverAgain();
  ASSERT_TRUE(back) << back.error().ToString();
  // The Pod was at its 20-second apply when the apiserver went: berthd learns of its end only
  // from the apiserver that came back.

  json done = api.WaitFor(id, {"succeeded", "failed", "cancelled"});
  std::string log = api.Log(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << log;
  EXPECT_EQ(Occurrences(log, "Apply complete!"), 1) << log;
  EXPECT_EQ(Occurrences(log, "(local-exec): berth-slow-started"), 1) << log;
  EXPECT_EQ((*world)->Agent().PodsStarted(), 1);
  EXPECT_EQ(berthd.Stop(), 0);
  // And the operator reading berthd's log saw the outage and its end.
  std::string berthd_log = sys::ReadFile(berthd.LogPath(1)).value();
  EXPECT_EQ(Occurrences(berthd_log, "kubernetes api not answering"), 1) << berthd_log;
  EXPECT_EQ(Occurrences(berthd_log, "kubernetes api answers again"), 1) << berthd_log;
}

}  // namespace
}  // namespace berth::server
