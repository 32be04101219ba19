#include "server/api/request_support.h"

#include "core/bounded_json.h"
#include "core/decimal.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "server/api/api.h"
#include "server/api/session_credentials.h"

namespace berth::server {

using nlohmann::json;

net::ServerResponse TokenGuard::operator()(const RouteRequest& r, Scope needed,
                                           const Body& body) const {
  auto unauthenticated = [](const std::string& message, const std::string& challenge) {
    auto response = ErrorResponse(401, "Unauthenticated", message);
    response.headers["WWW-Authenticate"] = challenge;
    return response;
  };
  auto [secret, by_cookie] = ApiSecretOf(r.http.headers);
  if (secret.empty()) return unauthenticated("a bearer token is required", "Bearer");
  auto token = store_.FindToken(HashToken(secret));
  if (!token) {
    if (token.error().kind != ErrorKind::kNotFound) return ErrorResponse(token.error());
    return unauthenticated(
        by_cookie ? "the session is not valid (log in again)" : "the token is not valid",
        "Bearer error=\"invalid_token\"");
  }
  if (by_cookie != token->id.starts_with(kSessionIdPrefix)) {
    return unauthenticated(by_cookie ? "the cookie holds no session"
                                     : "a session's secret is its cookie's, not a bearer token",
                           "Bearer error=\"invalid_token\"");
  }
  // A login code opens a session and nothing else (it is in a link, and in a browser's history).
  if (token->id.starts_with(kLoginCodeIdPrefix) &&
      !(r.http.method == "POST" && r.path == "/orgs/" + r.params.at("org") + "/sessions")) {
    return unauthenticated("a login code only opens a session (POST /orgs/{org}/sessions)",
                           "Bearer error=\"invalid_token\"");
  }
  // A browser sends its cookie with a request another site makes it send: a change needs the
  // CSRF token only the session's own pages were given.
  if (by_cookie && r.http.method != "GET" && r.http.method != "HEAD") {
    auto csrf = r.http.headers.find(std::string(kCsrfHeader));
    if (csrf == r.http.headers.end() || !crypto::EqualConstantTime(csrf->second, CsrfToken(secret)))
      return ErrorResponse(403, "PermissionDenied",
                           r.http.method + " " + r.path +
                               " by a session needs its CSRF token in the X-Berth-CSRF header");
  }
  if (token->expires_at != 0 && clock_.WallMillis() >= token->expires_at) {
    return unauthenticated(
        "the token expired at " + FormatRfc3339(std::chrono::system_clock::time_point(
                                      std::chrono::milliseconds(token->expires_at))),
        "Bearer error=\"invalid_token\"");
  }
  if (auto wait = limiter_.Take(token->id)) {
    auto response = ErrorResponse(
        429, "ResourceExhausted",
        "too many requests for this token; retry in " + std::to_string(wait->count()) + " s");
    response.headers["Retry-After"] = std::to_string(wait->count());
    return response;
  }
  const std::string& org = r.params.at("org");
  if (token->org_id != org) {
    return ErrorResponse(403, "PermissionDenied", "the token is not valid for organization " + org);
  }
  Caller caller{org, token->id, token->scopes, token->expires_at};
  if (!caller.scopes.Allow(needed))
    return ScopeDenied(caller, needed, r.http.method + " " + r.path);
  return body(caller);
}

net::ServerResponse ScopeDenied(const Caller& caller, Scope needed, const std::string& what) {
  std::string held;
  for (const std::string& name : caller.scopes.Names()) held += (held.empty() ? "" : ", ") + name;
  return ErrorResponse(403, "PermissionDenied",
                       what + " needs scope " + std::string(ScopeName(needed)) +
                           " (or admin); token " + caller.token_id + " has " + held);
}

std::optional<int64_t> WholeNumber(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;  // no sign
  return ParseDecimal<int64_t>(text);
}

Result<bool> QueryBool(const RouteRequest& r, const std::string& name) {
  auto it = r.query.find(name);
  if (it == r.query.end() || it->second == "false") return false;
  if (it->second == "true") return true;
  return Invalid(name, "must be true or false");
}

std::string ApiTime(int64_t unix_millis) {
  return FormatRfc3339(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(unix_millis)), 3);
}

ParsedBody ParseJsonBody(const RouteRequest& r, bool merge_patch) {
  auto refuse = [](net::ServerResponse response) {
    return ParsedBody(boost::system::in_place_error, std::move(response));
  };
  auto type = r.http.headers.find("content-type");
  std::string media =
      type == r.http.headers.end() ? "" : type->second.substr(0, type->second.find(';'));
  bool ok = media == "application/json" || (merge_patch && media == "application/merge-patch+json");
  if (!ok) {
    return refuse(ErrorResponse(415, "UnsupportedMediaType",
                                std::string("unsupported media type: send application/json") +
                                    (merge_patch ? " or application/merge-patch+json" : "")));
  }
  auto body = ParseBoundedJson(r.http.body);
  if (!body) {
    return refuse(ErrorResponse(
        Invalid("$",
                "must be valid JSON at most " + std::to_string(kApiJson.depth) +
                    " levels deep, of at most " + std::to_string(kApiJson.values) + " values",
                "the body is refused: " + body.error().message)));
  }
  if (!body->is_object()) return refuse(ErrorResponse(Invalid("$", "must be an object")));
  return ParsedBody(boost::system::in_place_value, std::move(*body));
}

Result<json> ValidateWith(const Schema& schema, json body) {
  FieldErrors errors;
  schema.Validate(body, "$", errors);
  if (!errors.empty()) {
    Error e = MakeError(ErrorKind::kInvalidArgument, "invalid request body");
    e.fields = std::move(errors);
    return e;
  }
  return Ok(std::move(body));
}

Error Invalid(std::string path, std::string rule, std::string message) {
  Error e = MakeError(ErrorKind::kInvalidArgument, std::move(message));
  e.fields.push_back({std::move(path), std::move(rule)});
  return e;
}

Error Unresolved(std::string path, std::string rule, std::string message) {
  Error e = Invalid(std::move(path), std::move(rule), std::move(message));
  e.kind = ErrorKind::kFailedPrecondition;
  return e;
}

}  // namespace berth::server
