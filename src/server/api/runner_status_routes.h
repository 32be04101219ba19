// The API's routes for how a runner is doing (docs/api.md, "Runners"): for a kubernetes-agent,
// whether an agent polls (its last poll and version), how many commands wait, and the commands
// its agents rejected or that no agent took in time (the dead letters an operator reads).
#pragma once

#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class RunnerStatusRoutes {
 public:
  RunnerStatusRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                     Clock& clock);

 private:
  net::ServerResponse Status(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Commands(const RouteRequest& r, const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  Clock& clock_;
};

}  // namespace berth::server
