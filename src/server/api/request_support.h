// What every API handler needs: who calls (a bearer token of one organization, rate limited),
// the request's JSON body, and its validation against a schema.
#pragma once

#include <boost/system/result.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"
#include "core/schema.h"
#include "server/api/rate_limiter.h"
#include "server/api/router.h"
#include "store/store.h"

namespace berth::server {

// The organization, from a valid token for it.
struct Caller {
  std::string org;
  std::string token_id;
};

class TokenGuard {
 public:
  using Body = std::function<net::ServerResponse(const Caller&)>;
  TokenGuard(store::Store& store, double rate, double burst, Clock& clock)
      : store_(store), limiter_(rate, burst, clock) {}
  // body(caller), or 401 without a valid token, 429 beyond its rate, 403 for another
  // organization's objects.
  net::ServerResponse operator()(const RouteRequest& r, const Body& body) const;

 private:
  store::Store& store_;
  mutable RateLimiter limiter_;
};

// A request's JSON object body, or the response that refuses it (415 for another media type,
// 400 for anything that is not a JSON object).
using ParsedBody = boost::system::result<nlohmann::json, net::ServerResponse>;
ParsedBody ParseJsonBody(const RouteRequest& r, bool merge_patch = false);

// The body if it fits the schema, else kInvalidArgument with every bad field.
Result<nlohmann::json> ValidateWith(const Schema& schema, nlohmann::json body);

// kInvalidArgument for one field.
Error Invalid(std::string path, std::string rule, std::string message = "invalid request");
// A well-formed field that names what is not there (a runner, a bundle, a folder): 409
// FailedPrecondition, naming the field, since the same request succeeds once it exists.
Error Unresolved(std::string path, std::string rule, std::string message = "invalid request");

}  // namespace berth::server
