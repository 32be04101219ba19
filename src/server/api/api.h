// berthd's REST API (docs/api.md): organizations' projects, environment types, environments,
// runners and runner rules under /orgs/{org}/..., bearer tokens scoped to one organization,
// refresh_runner, and typed errors with the JSON path of every bad field.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "launch/kubernetes/cluster_check.h"
#include "launch/kubernetes/cluster_target.h"
#include "net/http_server.h"
#include "server/api/deployment_control.h"
#include "server/api/router.h"
#include "server/change_feed.h"
#include "server/dispatch/states_elsewhere.h"
#include "store/store.h"

namespace berth::server {

struct ApiOptions {
  double requests_per_second = 100;  // per token; 0: no limit
  double burst = 200;
  Clock* clock = nullptr;  // nullptr: the system's
  // A deployment's source may be a folder on berthd's own machine: only for an embedded berthd
  // (`berth up`), where the caller and the server are one person.
  bool allow_server_paths = false;
  // Told when a deployment is queued, so that the dispatcher starts it at once; null: it polls.
  ChangeFeed* queued = nullptr;
  // Log followers wait on it for new chunks and ends; null: they poll.
  ChangeFeed* logs = nullptr;
  // Why local runs cannot have memory, CPU time or process limits here (no control groups);
  // empty: they can. A runner that sets one is then refused when saved.
  std::string local_limits_refusal;
  // Why local runs cannot have their network cut here (no sandbox); empty: they can.
  std::string local_network_refusal;
  // What this berthd reaches kubernetes runners' clusters with; nullopt: it reaches none (no
  // --kubernetes), and a runner that names a cluster is refused when saved.
  std::optional<launch::ClusterMeans> clusters;
  // What a kubernetes runner's run would meet in its cluster (POST .../runners/{id}/check), for
  // the org, runner id and configuration; null: this berthd runs no kubernetes runners.
  std::function<Result<launch::ClusterCheck>(const std::string& org, const std::string& runner,
                                             const nlohmann::json& runner_configuration)>
      check_cluster;
  // berthd serves TLS: a browser sends the session cookie over it only.
  bool secure_cookies = false;
  // An organization's per-environment metrics (GET /orgs/{org}/metrics), in the Prometheus
  // text format; empty: the route answers 404.
  std::function<std::string(const std::string& org)> environment_metrics;
  // State in object storage, as `berth state show|unlock` reach it (null: refused there too).
  StatesElsewhere* states_elsewhere = nullptr;
};

class ApiHandlers;

class Api {
 public:
  // Deployments' cancel and approve go to control (the dispatcher).
  Api(store::Store& store, DeploymentControl& control, const ApiOptions& options = {});
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;
  net::ServerResponse Handle(const net::ServerRequest& request) const;
  std::vector<std::string> Routes() const { return router_.Routes(); }

 private:
  Router router_;
  std::unique_ptr<ApiHandlers> handlers_;  // what the routes call into
};

// Tokens: "berth_" and 32 random bytes; the store keeps only their SHA-256.
std::string HashToken(const std::string& secret);
// Creates the token (with a new id when it has none) and returns it as stored, with its secret
// (shown once).
Result<std::pair<store::ApiToken, std::string>> IssueToken(store::Store& store,
                                                           store::ApiToken token);
// A token for org with these scopes: its secret.
Result<std::string> IssueToken(store::Store& store, const std::string& org,
                               const std::string& description,
                               Scopes scopes = Scopes::Of({Scope::kAdmin}));
// A new token secret: "berth_" and 32 random bytes.
std::string NewTokenSecret();

}  // namespace berth::server
