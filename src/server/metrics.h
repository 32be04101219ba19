// berthd's metrics (docs/metrics.md) in the Prometheus text format, served at /metrics: HTTP
// requests by route, method and status with their durations; deployments by state and each
// environment's queue and each replica's lease (read from the store at scrape time, so every
// replica tells the same);
// runs by outcome and their durations; each step of a deployment's time; runner gateway bytes;
// Kubernetes API requests.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>
#include <string_view>

#include "store/store.h"

namespace berth::server {

class BerthdMetrics {
 public:
  BerthdMetrics();

  // route: the pattern that served the request ("/orgs/{org}/deployments/{id}"), never the
  // path as sent (no ids, no tokens, a bounded set of labels).
  void Request(std::string_view route, std::string_view method, int status,
               std::chrono::duration<double> took);
  void GatewayBytes(std::string_view direction, size_t bytes);  // "in" or "out"
  // outcome: "succeeded" or the error kind.
  void RunEnded(std::string_view outcome, std::chrono::duration<double> took);
  // One step of a deployment: waiting in its queue ("queue"), its run's launch ("launch"), or
  // a TF step its runner timed ("init", "plan", "apply", ...; a name no runner uses counts as
  // "other": runners' results do not choose berthd's labels).
  void DeploymentStep(std::string_view step, double seconds);
  // Provider packages an ended local run fetched: result is "taken" (into its runner's shared
  // cache), "known" (the cache had them) or "refused" (beyond a limit, or unreadable).
  void ProviderPackages(std::string_view result, int count);

  // The registry's metrics, then the store's gauges, then extra (already in the text format):
  // what /metrics serves without a token, so nothing that names an organization, a project or
  // an environment.
  std::string Scrape(store::Store& store, std::string_view extra = {});
  // The series that do, for one organization (GET /orgs/{org}/metrics, with its token): each of
  // its environments' queue.
  static std::string ScrapeEnvironments(store::Store& store, const std::string& org);

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Counter>& gateway_bytes_;
  prometheus::Family<prometheus::Counter>& runs_;
  prometheus::Family<prometheus::Histogram>& run_seconds_;
  prometheus::Family<prometheus::Histogram>& step_seconds_;
  prometheus::Family<prometheus::Counter>& provider_packages_;
};

}  // namespace berth::server
