#include "server/api/session_routes.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "crypto/random.h"
#include "server/api/api.h"
#include "server/api/session_credentials.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr int64_t kSessionMillis = int64_t{12} * 3600 * 1000;
// Long enough to click a link a terminal printed; a code is spent when used.
constexpr int64_t kLoginCodeMillis = int64_t{2} * 60 * 1000;

// Never longer than the token it comes from.
int64_t ExpiryWithin(const Caller& c, int64_t expires_at) {
  return c.expires_at == 0 ? expires_at : std::min(expires_at, c.expires_at);
}

net::ServerResponse NotASession() {
  return ErrorResponse(404, "NotFound", "this request came with no session (a bearer token)");
}

}  // namespace

SessionRoutes::SessionRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                             Clock& clock, bool secure_cookies)
    : store_(store), authorized_(authorized), clock_(clock), secure_cookies_(secure_cookies) {
  auto add = [&](const std::string& method, const std::string& path,
                 net::ServerResponse (SessionRoutes::*handler)(const RouteRequest&, const Caller&)
                     const) {
    router.Add(method, path, [this, handler](const RouteRequest& r) {
      return authorized_(r, Scope::kRead, [&](const Caller& c) { return (this->*handler)(r, c); });
    });
  };
  add("POST", "/orgs/{org}/sessions", &SessionRoutes::Open);
  add("POST", "/orgs/{org}/login-codes", &SessionRoutes::MakeLoginCode);
  add("GET", "/orgs/{org}/session", &SessionRoutes::Current);
  add("DELETE", "/orgs/{org}/session", &SessionRoutes::Close);
}

std::string SessionRoutes::Cookie(const std::string& secret, int64_t max_age_seconds) const {
  return std::string(kSessionCookie) + "=" + secret +
         "; Path=/; Max-Age=" + std::to_string(max_age_seconds) + "; HttpOnly; SameSite=Strict" +
         (secure_cookies_ ? "; Secure" : "");
}

net::ServerResponse SessionRoutes::Open(const RouteRequest& r, const Caller& c) const {
  if (c.token_id.starts_with(kSessionIdPrefix))
    return ErrorResponse(409, "FailedPrecondition",
                         "a session opens no other session: log in with a token or a login code");
  if (!r.http.body.empty())
    return ErrorResponse(400, "InvalidArgument",
                         "POST /orgs/{org}/sessions takes no body: the token or login code is "
                         "the bearer token");
  const int64_t now = clock_.WallMillis();
  store::ApiToken session{.id = std::string(kSessionIdPrefix) + crypto::RandomId(),
                          .org_id = c.org,
                          .description = "browser session",
                          .created_at = now,
                          .scopes = c.scopes,
                          .expires_at = ExpiryWithin(c, now + kSessionMillis),
                          .created_by = c.token_id};
  // A login code is spent by the session it opens (at most one), which is its maker's: revoking
  // that token ends the session.
  if (c.token_id.starts_with(kLoginCodeIdPrefix)) {
    auto tokens = store_.ListTokens(c.org);
    if (!tokens) return ErrorResponse(tokens.error());
    for (const store::ApiToken& t : *tokens) {
      if (t.id == c.token_id) session.created_by = t.created_by;
    }
    // Deleted once: of two requests with one code, the second finds nothing to delete.
    if (auto spent = store_.DeleteToken(c.org, c.token_id); !spent) {
      if (spent.error().kind != ErrorKind::kNotFound) return ErrorResponse(spent.error());
      return ErrorResponse(401, "Unauthenticated", "the login code was used already");
    }
  }
  auto issued = IssueToken(store_, session);
  if (!issued) return ErrorResponse(issued.error());
  auto response = JsonResponse(201, json{{"id", issued->first.id},
                                         {"org", c.org},
                                         {"scopes", c.scopes.Names()},
                                         {"expires_at", ApiTime(session.expires_at)},
                                         {"csrf_token", CsrfToken(issued->second)}}
                                        .dump());
  response.headers["Set-Cookie"] = Cookie(issued->second, (session.expires_at - now) / 1000);
  response.headers["Cache-Control"] = "no-store";
  return response;
}

net::ServerResponse SessionRoutes::MakeLoginCode(const RouteRequest& r, const Caller& c) const {
  if (!c.token_id.starts_with(kApiTokenIdPrefix))
    return ErrorResponse(409, "FailedPrecondition",
                         "a login code is made with an API token, not a session or a code");
  if (!r.http.body.empty())
    return ErrorResponse(400, "InvalidArgument", "POST /orgs/{org}/login-codes takes no body");
  const int64_t now = clock_.WallMillis();
  store::ApiToken code{.id = std::string(kLoginCodeIdPrefix) + crypto::RandomId(),
                       .org_id = c.org,
                       .description = "login code",
                       .created_at = now,
                       .scopes = c.scopes,
                       .expires_at = ExpiryWithin(c, now + kLoginCodeMillis),
                       .created_by = c.token_id};
  auto issued = IssueToken(store_, code);
  if (!issued) return ErrorResponse(issued.error());
  auto response = JsonResponse(
      201, json{{"code", issued->second}, {"org", c.org}, {"expires_at", ApiTime(code.expires_at)}}
               .dump());
  response.headers["Cache-Control"] = "no-store";
  return response;
}

net::ServerResponse SessionRoutes::Current(const RouteRequest& r, const Caller& c) const {
  if (!c.token_id.starts_with(kSessionIdPrefix)) return NotASession();
  std::string secret = CookieValue(r.http.headers.at("cookie"), kSessionCookie);
  auto response = JsonResponse(200, json{{"id", c.token_id},
                                         {"org", c.org},
                                         {"scopes", c.scopes.Names()},
                                         {"expires_at", ApiTime(c.expires_at)},
                                         {"csrf_token", CsrfToken(secret)}}
                                        .dump());
  response.headers["Cache-Control"] = "no-store";
  return response;
}

net::ServerResponse SessionRoutes::Close(const RouteRequest&, const Caller& c) const {
  if (!c.token_id.starts_with(kSessionIdPrefix)) return NotASession();
  if (auto deleted = store_.DeleteToken(c.org, c.token_id); !deleted)
    return ErrorResponse(deleted.error());
  net::ServerResponse response{.status = 204};
  response.headers["Set-Cookie"] = Cookie("", 0);
  return response;
}

}  // namespace berth::server
