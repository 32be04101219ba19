// The API's routes for an environment's TF state (docs/api.md, "State"): its summary with the
// lock's holder, run and age and its history; every version, one version, a rollback as a new
// version; and breaking a lock, with a reason that stays in the history. An environment whose
// state is in s3 is shown and unlocked there; its versions are the storage's.
#pragma once

#include "server/api/request_support.h"
#include "server/api/router.h"
#include "server/dispatch/states_elsewhere.h"
#include "store/store.h"

namespace berth::server {

struct StateHome;  // where an environment keeps its state (state_routes.cpp)

class StateRoutes {
 public:
  // elsewhere: how berthd reads and unlocks state in object storage (null: it does not).
  StateRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
              StatesElsewhere* elsewhere);

 private:
  net::ServerResponse Show(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Versions(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Version(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Push(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Rollback(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Unlock(const RouteRequest& r, const Caller& c) const;
  // Show and Unlock for an environment whose runner keeps its state in other storage.
  net::ServerResponse ShowElsewhere(const StateHome& home) const;
  net::ServerResponse UnlockElsewhere(const StateHome& home, const Caller& c,
                                      const std::string& reason) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  StatesElsewhere* elsewhere_;
};

}  // namespace berth::server
