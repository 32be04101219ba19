// Browser sessions, the dashboard's login (docs/api.md, "Sessions"): a token is exchanged for
// a session whose secret only an HttpOnly, SameSite=Strict cookie holds; a one-time login code
// (for a link such as `berth ui` prints) is exchanged the same way; the session's CSRF token
// guards every change it makes; logout ends it. A session has its token's scopes, and lives
// 12 hours at most, never longer than that token.
#pragma once

#include "core/clock.h"
#include "server/api/request_support.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

class SessionRoutes {
 public:
  SessionRoutes(Router& router, store::Store& store, const TokenGuard& authorized, Clock& clock,
                bool secure_cookies);

 private:
  net::ServerResponse Open(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse MakeLoginCode(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Current(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Close(const RouteRequest& r, const Caller& c) const;
  // The Set-Cookie value that gives the browser secret for max_age seconds (0: forget it).
  std::string Cookie(const std::string& secret, int64_t max_age_seconds) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  Clock& clock_;
  const bool secure_cookies_;
};

}  // namespace berth::server
