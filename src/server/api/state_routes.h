// The API's routes for an environment's TF state (docs/api.md, "State"): its summary with the
// lock's holder, run and age and its history; every version, one version, a rollback as a new
// version; and breaking a lock, with a reason that stays in the history.
#pragma once

#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class StateRoutes {
 public:
  StateRoutes(Router& router, store::Store& store, const TokenGuard& authorized);

 private:
  net::ServerResponse Show(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Versions(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Version(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Push(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Rollback(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Unlock(const RouteRequest& r, const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
};

}  // namespace berth::server
