// The API's routes for how a runner is doing (docs/api.md, "Runners"): for a kubernetes-agent,
// whether an agent polls (its last poll and version), how many commands wait, and the commands
// its agents rejected or that no agent took in time (the dead letters an operator reads); for a
// kubernetes runner, what its runs would meet in its cluster (a check, launching nothing).
#pragma once

#include <functional>

#include "launch/kubernetes/cluster_check.h"
#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class RunnerStatusRoutes {
 public:
  using ClusterChecker = std::function<Result<launch::ClusterCheck>(
      const std::string& org, const std::string& runner, const nlohmann::json& configuration)>;
  // check: null when this berthd runs no kubernetes runners.
  RunnerStatusRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                     Clock& clock, ClusterChecker check);

 private:
  net::ServerResponse Status(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Commands(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Check(const RouteRequest& r, const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  Clock& clock_;
  const ClusterChecker check_;
};

}  // namespace berth::server
