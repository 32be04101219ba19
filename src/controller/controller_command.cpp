#include "controller/controller_command.h"

#include <unistd.h>

#include <atomic>
#include <thread>

#include "controller/leader_election.h"
#include "controller/reconciler.h"
#include "controller/runner_pki.h"
#include "core/clock.h"
#include "kube/kube_config.h"
#include "net/http_server.h"
#include "sys/logger.h"

namespace berth::controller {

ControllerCommand::ControllerCommand(CLI::App& app) {
  app.add_option("--namespace", ns_, "the controller's own namespace (its CA Secret lives there)")
      ->envname("POD_NAMESPACE");
  app.add_option("--watch-namespace", loop_options_.watch_namespace,
                 "reconcile Terraform objects of this namespace only (default: all)");
  app.add_option("--concurrency", loop_options_.concurrency, "objects reconciled at once")
      ->check(CLI::Range(1, 256));
  app.add_option("--runner-creation-timeout", runner_creation_timeout_,
                 "seconds a runner Pod has to become Ready (then RunnerConnectionFailed)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--destroy-timeout", destroy_timeout_,
                 "seconds after a deletion that a failing destroy is retried (deletionPolicy: "
                 "destroy); then the object goes and its infrastructure is kept")
      ->check(CLI::Range(0, 7 * 24 * 3600));
  app.add_option("--kube-api-qps", client_options_.qps,
                 "requests per second to the Kubernetes API, on average")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--kube-api-burst", client_options_.burst,
                 "requests to the Kubernetes API at once above --kube-api-qps")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_flag("--leader-elect,!--no-leader-elect", leader_elect_,
               "reconcile only while holding the Lease berth-controller (several replicas)");
  app.add_option("--metrics-address", metrics_address_, "where /metrics and /healthz listen");
  app.add_option("--metrics-port", metrics_port_, "their port (0: any free one, logged)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--state-address", state_options_.address,
                 "where the state service listens (runner Pods keep their object's state there)");
  app.add_option("--state-port", state_options_.port, "its port (0: any free one, logged)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--state-host", state_options_.host,
                 "the DNS name or IP address runner Pods reach the state service by (its "
                 "certificate names it)")
      ->required();
}

int ControllerCommand::Run(const sigset_t& stop) {
  sys::Logger log;
  auto fail = [&log](const Error& error) {
    log.Error("not started", {{"why", error.ToString()}});
    return 1;
  };
  const kube::Environment env = kube::CurrentEnvironment();
  auto config = kube::KubeConfig::Load(env, {});
  if (!config) return fail(config.error());
  auto api = kube::MakeKubeClient(std::move(*config), client_options_);
  auto settings = launch::ControllerRunnerSettings(env);
  if (!settings) return fail(settings.error());
  Clock& clock = SystemClock::Instance();
  auto pki = RunnerPki::LoadOrCreate(*api, clock, {.ns = ns_});
  if (!pki) return fail(pki.error());
  auto state = StateServer::Start(*api, **pki, clock, state_options_);
  if (!state) return fail(state.error());
  log.Info("serving state",
           {{"address", state_options_.address + ":" + std::to_string((*state)->Port())},
            {"url", (*state)->Endpoint().url}});
  const std::string instance = env.contains("POD_NAME") ? env.at("POD_NAME") : "berth-controller";
  Reconciler reconciler(*api, **pki,
                        {.settings = *settings,
                         .state = (*state)->Endpoint(),
                         .runner_creation_timeout = std::chrono::seconds(runner_creation_timeout_),
                         .instance = instance,
                         .destroy_timeout = std::chrono::seconds(destroy_timeout_)});
  ControllerLoop loop(*api, reconciler, loop_options_);

  auto server = net::StartHttpServer(
      {.address = metrics_address_, .port = metrics_port_, .allow_plain_http = true},
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
  if (!server) return fail(server.error());
  log.Info("serving metrics",
           {{"address", metrics_address_ + ":" + std::to_string((*server)->Port())}});

  std::atomic<bool> stopping{false};
  std::thread signals([&] {
    int signal = 0;
    sigwait(&stop, &signal);
    log.Info("stopping", {{"signal", std::to_string(signal)}});
    stopping = true;
  });
  LeaderElector elector(*api, clock,
                        {.ns = ns_, .identity = instance + "-" + std::to_string(getpid())});
  if (leader_elect_) {
    const bool leading = elector.AcquireAndKeep([&] { return stopping.load(); },
                                                [&log] {
                                                  // Another replica may be reconciling by now:
                                                  // stop at once, as client-go's leaders do.
                                                  log.Error("lost the Lease, exiting");
                                                  std::_Exit(1);
                                                });
    if (leading) log.Info("leading");
  }
  if (!stopping) loop.Start();
  signals.join();
  loop.Stop();
  (*server)->Stop();
  return 0;
}

}  // namespace berth::controller
