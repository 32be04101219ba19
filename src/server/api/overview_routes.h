// GET /orgs/{org}/overview: every environment of an organization with what the dashboard's
// overview shows (its runner, the deployment that holds it, its newest deployment, how many
// wait), in one request whatever the number of environments.
#pragma once

#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class OverviewRoutes {
 public:
  OverviewRoutes(Router& router, store::Store& store, const TokenGuard& authorized);

 private:
  net::ServerResponse Overview(const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
};

}  // namespace berth::server
