// What every API handler needs: who calls (a bearer token of one organization, rate limited),
// the request's JSON body, and its validation against a schema.
#pragma once

#include <boost/system/result.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/schema.h"
#include "core/token_scopes.h"
#include "server/api/rate_limiter.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

// The organization, from a valid token for it, and what that token may do.
struct Caller {
  std::string org;
  std::string token_id;
  Scopes scopes;
  int64_t expires_at = 0;  // of the token, Unix ms; 0: never
};

class TokenGuard {
 public:
  using Body = std::function<net::ServerResponse(const Caller&)>;
  TokenGuard(store::Store& store, double rate, double burst, Clock& clock)
      : store_(store), clock_(clock), limiter_(rate, burst, clock) {}
  // body(caller), or 401 without a valid, unexpired token, 429 beyond its rate, 403 for another
  // organization's objects or a token without a scope that allows `needed`.
  net::ServerResponse operator()(const RouteRequest& r, Scope needed, const Body& body) const;

 private:
  store::Store& store_;
  Clock& clock_;
  mutable RateLimiter limiter_;
};

// 403 naming what the token lacks.
net::ServerResponse ScopeDenied(const Caller& caller, Scope needed, const std::string& what);

// A request's JSON object body, or the response that refuses it (415 for another media type,
// 400 for anything that is not a JSON object).
using ParsedBody = boost::system::result<nlohmann::json, net::ServerResponse>;
ParsedBody ParseJsonBody(const RouteRequest& r, bool merge_patch = false);

// The body if it fits the schema, else kInvalidArgument with every bad field.
Result<nlohmann::json> ValidateWith(const Schema& schema, nlohmann::json body);

// A number in a query or header: ASCII digits only (no sign, space, fraction or exponent) that
// fit in 64 bits; nothing otherwise.
std::optional<int64_t> WholeNumber(std::string_view text);

// A boolean query parameter: true or false, absent is false; anything else is an error naming it.
Result<bool> QueryBool(const RouteRequest& r, const std::string& name);

// A time the API shows: RFC 3339 UTC with milliseconds.
std::string ApiTime(int64_t unix_millis);

// kInvalidArgument for one field.
Error Invalid(std::string path, std::string rule, std::string message = "invalid request");
// A well-formed field that names what is not there (a runner, a bundle, a folder): 409
// FailedPrecondition, naming the field, since the same request succeeds once it exists.
Error Unresolved(std::string path, std::string rule, std::string message = "invalid request");

}  // namespace berth::server
