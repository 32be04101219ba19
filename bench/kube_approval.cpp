// An approved apply on a Kubernetes runner, from the approval to the deployment's end: in a
// Pod of its own (the default: a new Pod, a second init) against in the plan's kept Pod
// (job.keep_for_approval: no second Pod, no second init). The test cluster with the test node
// agent, the real tofu and examples/hello (no provider: the test agent's Pods see only their
// image, which holds none, so what a provider's install costs comes on top of what this
// shows); N deployments of each, alternating. Prints both medians and the ratio.
// Usage: kube_approval [N]   (after `source "$(scripts/testenv --env-file)"`)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launcher_world.h"
#include "server/dispatch/dispatcher.h"
#include "state_server.h"
#include "sys/module_bundle.h"
#include "test_tools.h"

using namespace berth;
using nlohmann::json;
using S = DeploymentState;

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "kube_approval: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T Must(Result<T> result, const char* what) {
  if (!result) Fail(std::string(what) + ": " + result.error().ToString());
  return std::move(*result);
}

void Must(const Result<void>& result, const char* what) {
  if (!result) Fail(std::string(what) + ": " + result.error().ToString());
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// An environment env on a runner of its own, whose Pods run in ns and whose plans' Pods are
// kept for their apply or not.
void AddEnvironment(store::Store& store, const std::string& ns, const std::string& env, bool keep) {
  store::Record runner{.kind = store::Kind::kRunner, .org_id = "acme", .id = env};
  runner.columns = {{"runner_type", "kubernetes"}, {"storage_type", "berth"}};
  json job = {{"namespace", ns}};
  if (keep) job["keep_for_approval"] = "10m";
  runner.body = {{"runner_configuration", {{"type", "kubernetes"}, {"job", job}}},
                 {"state_storage_configuration", {{"type", "berth"}}}};
  Must(store.Create(runner), "runner");
  store::Record record{
      .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = env};
  record.columns = {{"env_type_id", "dev"}, {"runner_id", env}};
  Must(store.Create(record), "environment");
}

store::Deployment WaitFor(store::Store& store, server::Dispatcher& dispatcher,
                          const std::string& id, S state) {
  for (int i = 0; i < 12000; ++i) {
    dispatcher.Tick();
    store::Deployment d = Must(store.Deployments().Get("acme", id), "deployment");
    if (d.state == state) return d;
    if (IsTerminal(d.state))
      Fail(id + " ended " + d.transitions.dump() + DeploymentResultToJson(d.result).dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Fail(id + " did not get to " + std::string(DeploymentStateName(state)));
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::stoi(argv[1])) : 7;
  auto world = Must(launch::LauncherWorld::Create("bench-approval"), "cluster");
  auto dir = Must(sys::TempDir::Create("kube-approval"), "folder");
  auto server = Must(server::StateServer::Start(dir.Path()), "berthd's runner side");
  store::Store& store = server->Store();
  Must(store.CreateOrganization("acme"), "organization");
  Must(store.Create({.kind = store::Kind::kProject, .org_id = "acme", .id = "web"}), "project");
  Must(store.Create({.kind = store::Kind::kEnvType, .org_id = "acme", .id = "dev"}), "env type");
  AddEnvironment(store, world->Namespace(), "fresh", false);
  AddEnvironment(store, world->Namespace(), "kept", true);
  auto bundle = Must(
      store.DeploymentData().PutBundle(
          "acme", Must(sys::PackModule(testenv::SourceDir() / "examples" / "hello"), "module")),
      "bundle");

  server::Launchers launchers;
  server::Dispatcher dispatcher(store, launchers, server->Signer(), {.url = server->Url()});
  launch::KubernetesSettings settings = world->Settings();
  settings.container_backend_url = server->Url();
  launch::KubernetesLauncher kubernetes(world->LauncherClient(), settings, SystemClock::Instance(),
                                        dispatcher);
  launchers["kubernetes"] = &kubernetes;
  Must(kubernetes.Start(), "launcher");

  std::map<std::string, std::vector<double>> ms;
  for (int i = 0; i < runs; ++i) {
    for (const std::string env : {"fresh", "kept"}) {
      const std::string id = env + "-" + std::to_string(i);
      store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = env, .id = id};
      d.spec = {.op = DeploymentOp::kApply,
                .source_bundle = bundle.id,
                .variables = json{{"name", id}},
                .approval_required = true};
      Must(store.Deployments().Create(d), "deployment");
      store::Deployment waiting = WaitFor(store, dispatcher, id, S::kWaitingApproval);
      const auto start = std::chrono::steady_clock::now();
      Must(dispatcher.Approve("acme", id, waiting.result.PlanHash(), "bench"), "approve");
      WaitFor(store, dispatcher, id, S::kSucceeded);
      ms[env].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  kubernetes.Stop();
  for (const auto& [env, values] : ms) {
    std::printf("%s:", env.c_str());
    for (double v : values) std::printf(" %.0f", v);
    std::printf(" ms (median %.0f)\n", Median(values));
  }
  std::printf("approval to end, kept Pod / Pod of its own: %.2f\n",
              Median(ms["kept"]) / Median(ms["fresh"]));
  return 0;
}
