// API tokens beyond the first: create (the secret is shown once), list, revoke. Admin only.
#pragma once

#include "core/clock.h"
#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class TokenRoutes {
 public:
  TokenRoutes(Router& router, store::Store& store, const TokenGuard& authorized, Clock& clock);

 private:
  net::ServerResponse Create(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse List(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Revoke(const RouteRequest& r, const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  Clock& clock_;
};

}  // namespace berth::server
