// berth-controller: reconciles Terraform objects (docs/controller.md) until SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <thread>

#include "controller/controller_loop.h"
#include "controller/leader_election.h"
#include "controller/reconciler.h"
#include "controller/runner_pki.h"
#include "controller/state_server.h"
#include "core/clock.h"
#include "kube/kube_config.h"
#include "net/http_server.h"

namespace {

using namespace berth;

int Fail(const std::string& message) {
  std::fprintf(stderr, "berth-controller: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"berth-controller: runs Terraform objects in their own runner Pods"};
  std::string ns = "berth-system";
  controller::ControllerOptions loop_options;
  int runner_creation_timeout = 120;
  int destroy_timeout = 900;
  kube::KubeClientOptions client_options{.user_agent = "berth-controller"};
  std::string metrics_address = "0.0.0.0";
  int metrics_port = 8080;
  app.add_option("--namespace", ns, "the controller's own namespace (its CA Secret lives there)")
      ->envname("POD_NAMESPACE");
  app.add_option("--watch-namespace", loop_options.watch_namespace,
                 "reconcile Terraform objects of this namespace only (default: all)");
  app.add_option("--concurrency", loop_options.concurrency, "objects reconciled at once")
      ->check(CLI::Range(1, 256));
  app.add_option("--runner-creation-timeout", runner_creation_timeout,
                 "seconds a runner Pod has to become Ready (then RunnerConnectionFailed)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--destroy-timeout", destroy_timeout,
                 "seconds after a deletion that a failing destroy is retried (deletionPolicy: "
                 "destroy); then the object goes and its infrastructure is kept")
      ->check(CLI::Range(0, 7 * 24 * 3600));
  app.add_option("--kube-api-qps", client_options.qps,
                 "requests per second to the Kubernetes API, on average")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--kube-api-burst", client_options.burst,
                 "requests to the Kubernetes API at once above --kube-api-qps")
      ->check(CLI::Range(1.0, 10000.0));
  bool leader_elect = true;
  app.add_flag("--leader-elect,!--no-leader-elect", leader_elect,
               "reconcile only while holding the Lease berth-controller (several replicas)");
  app.add_option("--metrics-address", metrics_address, "where /metrics and /healthz listen");
  app.add_option("--metrics-port", metrics_port, "their port (0: any free one, printed)")
      ->check(CLI::Range(0, 65535));
  controller::StateServerOptions state_options;
  app.add_option("--state-address", state_options.address,
                 "where the state service listens (runner Pods keep their object's state there)");
  app.add_option("--state-port", state_options.port, "its port (0: any free one, printed)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--state-host", state_options.host,
                 "the DNS name or IP address runner Pods reach the state service by (its "
                 "certificate names it)")
      ->required();
  CLI11_PARSE(app, argc, argv);

  // Before any thread starts: the stop signals are read here, not delivered to a thread.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  const kube::Environment env = kube::CurrentEnvironment();
  auto config = kube::KubeConfig::Load(env, {});
  if (!config) return Fail(config.error().ToString());
  auto api = kube::MakeKubeClient(std::move(*config), client_options);
  auto settings = launch::ControllerRunnerSettings(env);
  if (!settings) return Fail(settings.error().ToString());
  auto pki = controller::RunnerPki::LoadOrCreate(*api, SystemClock::Instance(), {.ns = ns});
  if (!pki) return Fail(pki.error().ToString());
  auto state = controller::StateServer::Start(*api, **pki, SystemClock::Instance(), state_options);
  if (!state) return Fail(state.error().ToString());
  std::fprintf(stderr, "berth-controller: serving state on %s:%d as %s\n",
               state_options.address.c_str(), (*state)->Port(), (*state)->Endpoint().url.c_str());
  controller::Reconciler reconciler(
      *api, **pki,
      {.settings = *settings,
       .state = (*state)->Endpoint(),
       .runner_creation_timeout = std::chrono::seconds(runner_creation_timeout),
       .instance = env.contains("POD_NAME") ? env.at("POD_NAME") : "berth-controller",
       .destroy_timeout = std::chrono::seconds(destroy_timeout)});
  controller::ControllerLoop loop(*api, reconciler, loop_options);

  auto server = net::StartHttpServer(
      {.address = metrics_address, .port = metrics_port, .allow_plain_http = true},
      [&](const net::ServerRequest& request) -> net::ServerResponse {
        if (request.target == "/metrics")
          return {.headers = {{"Content-Type", "text/plain; version=0.0.4"}},
                  .body = loop.MetricsText() + api->MetricsText()};
        if (request.target == "/healthz" || request.target == "/readyz") {
          const bool synced = loop.WaitForSync(std::chrono::milliseconds(0));
          return {.status = synced ? 200 : 503, .body = synced ? "ok\n" : "syncing\n"};
        }
        return {.status = 404};
      });
  if (!server) return Fail(server.error().ToString());
  std::fprintf(stderr, "berth-controller: serving metrics on %s:%d\n", metrics_address.c_str(),
               (*server)->Port());
  std::fflush(stderr);

  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    int signal = 0;
    sigwait(&stop, &signal);
    std::fprintf(stderr, "berth-controller: stopping (signal %d)\n", signal);
    stopping = true;
  });
  const std::string identity = env.contains("POD_NAME") ? env.at("POD_NAME") : "berth-controller";
  controller::LeaderElector elector(
      *api, SystemClock::Instance(),
      {.ns = ns, .identity = identity + "-" + std::to_string(getpid())});
  if (leader_elect) {
    const bool leading = elector.AcquireAndKeep(
        [&] { return stopping.load(); },
        [] {
          // Another replica may be reconciling by now: stop at once, as client-go's leaders do.
          std::fprintf(stderr, "berth-controller: lost the Lease, exiting\n");
          std::_Exit(1);
        });
    if (leading) std::fprintf(stderr, "berth-controller: leading\n");
  }
  if (!stopping) loop.Start();
  signals.join();
  loop.Stop();
  (*server)->Stop();
  return 0;
}
