// Metric names follow Prometheus' conventions: berth_ prefix, base units, _total on counters.
#include "server/metrics.h"

#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "core/time_format.h"

namespace berth::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// From 5 ms to 10 s: API requests.
const Histogram::BucketBoundaries kRequestBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10};
// From a second to six hours: runs.
const Histogram::BucketBoundaries kRunBuckets = {1,   5,   10,   30,   60,   120,
                                                 300, 600, 1800, 3600, 21600};

// From 10 ms to an hour: the steps of a deployment.
const Histogram::BucketBoundaries kStepBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                  2.5,  5,     10,   30,  60,   300, 3600};

// The steps a deployment's time is made of: berthd's own, then the runner's (docs/runner.md).
constexpr std::string_view kKnownSteps[] = {
    "queue", "launch",  "version", "init",   "force-unlock", "validate", "plan", "show",
    "apply", "refresh", "output",  "rescue", "restore",      "push",     "drift"};

std::string StepLabel(std::string_view step) {
  for (std::string_view known : kKnownSteps) {
    if (step == known) return std::string(step);
  }
  return "other";
}

}  // namespace

BerthdMetrics::BerthdMetrics()
    : requests_(BuildCounter()
                    .Name("berth_http_requests_total")
                    .Help("HTTP requests served, by route pattern, method and status.")
                    .Register(registry_)),
      request_seconds_(BuildHistogram()
                           .Name("berth_http_request_duration_seconds")
                           .Help("Time to answer an HTTP request (a streamed log: its start).")
                           .Register(registry_)),
      gateway_bytes_(BuildCounter()
                         .Name("berth_gateway_bytes_total")
                         .Help("Bytes through the runner gateway: in from runners, out to them.")
                         .Register(registry_)),
      runs_(BuildCounter()
                .Name("berth_runs_total")
                .Help("Runs that ended, by outcome (succeeded, or the error kind).")
                .Register(registry_)),
      run_seconds_(BuildHistogram()
                       .Name("berth_run_duration_seconds")
                       .Help("From a run's launch to its end.")
                       .Register(registry_)),
      step_seconds_(BuildHistogram()
                        .Name("berth_deployment_step_seconds")
                        .Help("Each step of a deployment: its wait in the queue, its run's "
                              "launch, and each TF step its runner timed.")
                        .Register(registry_)),
      provider_packages_(BuildCounter()
                             .Name("berth_provider_packages_total")
                             .Help("Provider packages ended local runs fetched: taken into their "
                                   "runner's shared cache, known to it already, or refused.")
                             .Register(registry_)) {}

void BerthdMetrics::Request(std::string_view route, std::string_view method, int status,
                            std::chrono::duration<double> took) {
  std::string r = route.empty() ? "unmatched" : std::string(route);
  requests_.Add({{"route", r}, {"method", std::string(method)}, {"status", std::to_string(status)}})
      .Increment();
  request_seconds_.Add({{"route", r}}, kRequestBuckets).Observe(took.count());
}

void BerthdMetrics::GatewayBytes(std::string_view direction, size_t bytes) {
  gateway_bytes_.Add({{"direction", std::string(direction)}}).Increment(static_cast<double>(bytes));
}

void BerthdMetrics::RunEnded(std::string_view outcome, std::chrono::duration<double> took) {
  runs_.Add({{"outcome", std::string(outcome)}}).Increment();
  run_seconds_.Add({}, kRunBuckets).Observe(took.count());
}

void BerthdMetrics::DeploymentStep(std::string_view step, double seconds) {
  step_seconds_.Add({{"step", StepLabel(step)}}, kStepBuckets).Observe(seconds);
}

void BerthdMetrics::ProviderPackages(std::string_view result, int count) {
  provider_packages_.Add({{"result", std::string(result)}}).Increment(count);
}

std::string BerthdMetrics::ScrapeEnvironments(store::Store& store, const std::string& org) {
  prometheus::Registry now;
  auto& depth = BuildGauge()
                    .Name("berth_environment_queued_deployments")
                    .Help("Deployments queued behind each environment's current one.")
                    .Register(now);
  auto& waited = BuildGauge()
                     .Name("berth_environment_queue_wait_seconds")
                     .Help("How long the oldest queued deployment of each environment has waited.")
                     .Register(now);
  if (auto queues = store.Deployments().Queues()) {
    int64_t now_ms = UnixMillisNow();
    for (const store::EnvironmentQueue& q : *queues) {
      if (q.org_id != org) continue;
      prometheus::Labels labels{{"org", q.org_id}, {"project", q.project_id}, {"env", q.env_id}};
      depth.Add(labels).Set(static_cast<double>(q.queued));
      waited.Add(labels).Set(static_cast<double>(now_ms - q.oldest_created_at) / 1000.0);
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, now.Collect());
  return out.str();
}

std::string BerthdMetrics::Scrape(store::Store& store, std::string_view extra) {
  // Gauges read now, in a registry of this scrape: an environment whose queue emptied is gone.
  prometheus::Registry now;
  auto& by_state = BuildGauge()
                       .Name("berth_deployments")
                       .Help("Deployments in the store, by state.")
                       .Register(now);
  if (auto counts = store.Deployments().CountByState()) {
    for (const auto& [state, count] : *counts)
      by_state.Add({{"state", std::string(DeploymentStateName(state))}})
          .Set(static_cast<double>(count));
  }
  auto& lease_left = BuildGauge()
                         .Name("berth_replica_lease_seconds")
                         .Help(
                             "Seconds left of each berthd replica's lease on the database "
                             "(negative: it ended, and its runs are taken over).")
                         .Register(now);
  if (auto replicas = store.Replicas().List()) {
    int64_t now_ms = UnixMillisNow();
    for (const store::ReplicaLease& r : *replicas)
      lease_left.Add({{"replica", r.id}, {"host", r.host}})
          .Set(static_cast<double>(r.lease_until - now_ms) / 1000.0);
  }
  std::ostringstream out;
  prometheus::TextSerializer serializer;
  serializer.Serialize(out, registry_.Collect());
  serializer.Serialize(out, now.Collect());
  out << extra;
  return out.str();
}

}  // namespace berth::server
