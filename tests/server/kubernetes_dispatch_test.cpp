// Deployments on a Kubernetes runner: the dispatcher hands a bundle deployment to the
// Kubernetes launcher, whose runner Pod (run by the test node agent, which plays the kubelet)
// fetches its bundle and inputs through the runner gateway (at KUBERNETES_CONTAINER_BACKEND_URL)
// with the token from its Secret,
// writes the state to berthd's backend, ships its log and posts its result.
#include <gtest/gtest.h>

#include <thread>

#include "cli/bundle.h"
#include "kube/resource.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launcher_world.h"
#include "server/dispatch/dispatcher.h"
#include "state_server.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

TEST(KubernetesDispatch, ABundleDeploymentRunsInARunnerPodThroughTheContainerBackendUrl) {
  auto world = launch::LauncherWorld::Create("dispatch-kubernetes");
  ASSERT_TRUE(world) << world.error().ToString();
  auto dir = sys::TempDir::Create("kubernetes-dispatch");
  ASSERT_TRUE(dir);
  auto server = StateServer::Start(dir->Path());
  ASSERT_TRUE(server) << server.error().ToString();
  store::Store& store = (*server)->Store();

  // Pods reach berthd at KUBERNETES_CONTAINER_BACKEND_URL; the dispatcher's own URL (what
  // local runners use) leads nowhere, so a Pod that used it could not fetch its bundle.
  launch::KubernetesSettings settings = (*world)->Settings();
  settings.container_backend_url = (*server)->Url();
  Launchers launchers;
  Dispatcher dispatcher(store, launchers, (*server)->Signer(),
                        DispatcherOptions{.url = "http://127.0.0.1:1"});
  launch::KubernetesLauncher kubernetes((*world)->LauncherClient(), settings,
                                        SystemClock::Instance(), dispatcher);
  launchers["kubernetes"] = &kubernetes;
  ASSERT_TRUE(kubernetes.Start());

  ASSERT_TRUE(store.CreateOrganization("acme"));
  ASSERT_TRUE(store.Create({.kind = store::Kind::kProject, .org_id = "acme", .id = "web"}));
  ASSERT_TRUE(store.Create({.kind = store::Kind::kEnvType, .org_id = "acme", .id = "dev"}));
  store::Record runner{.kind = store::Kind::kRunner, .org_id = "acme", .id = "cluster"};
  runner.columns = {{"runner_type", "kubernetes"}, {"storage_type", "berth"}};
  runner.body = {{"runner_configuration", json::object()},
                 {"state_storage_configuration", {{"type", "berth"}}}};
  ASSERT_TRUE(store.Create(runner));
  store::Record env{
      .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "dev"};
  env.columns = {{"env_type_id", "dev"}, {"runner_id", "cluster"}};
  ASSERT_TRUE(store.Create(env));

  auto packed = cli::PackModule(testenv::SourceDir() / "examples/hello");
  ASSERT_TRUE(packed);
  auto bundle = store.DeploymentData().PutBundle("acme", *packed);
  ASSERT_TRUE(bundle);
  store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = "k1"};
  // The labels the API snapshots onto a deployment: resources that must reach the Pod, and an
  // image override this launcher is not allowed to take (an event says so).
  d.spec = {.op = DeploymentOp::kApply,
            .source_bundle = bundle->id,
            .variables = {{"name", "pod"}},
            .labels = {{"berth.dev/runner-spec.kubernetes_limit_memory", "900Mi"},
                       {"berth.dev/runner-spec.kubernetes_request_cpu", "50m"},
                       {"berth.dev/runner-spec.kubernetes_image", "elsewhere/runner:1"}}};
  ASSERT_TRUE(store.Deployments().Create(d));

  store::Deployment now;
  json resources;  // of the runner container, as the Pod was made
  for (int i = 0; i < 1200; ++i) {
    dispatcher.Tick();
    if (resources.is_null()) {
      auto pods = (*world)->Admin().List(kube::kPods, (*world)->Namespace(), {});
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
  EXPECT_TRUE(
      now.result.value("image_id", "").starts_with("berth-test-node://berth/runner:test@sha256:"))
      << now.result.dump();
  EXPECT_EQ(resources["requests"]["cpu"], "50m") << resources.dump();
  auto events = store.DeploymentData().Events("acme", "k1");
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->front().reason, "ImageOverrideIgnored");
  EXPECT_EQ(events->front().type, "Warning");
  ASSERT_EQ(now.state, S::kSucceeded) << now.transitions.dump() << now.result.dump();
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
  kubernetes.Stop();
}

}  // namespace
}  // namespace berth::server
