#include "server/api/request_support.h"

#include "core/bounded_json.h"
#include "server/api/api.h"

namespace berth::server {

using nlohmann::json;

net::ServerResponse TokenGuard::operator()(const RouteRequest& r, const Body& body) const {
  auto header = r.http.headers.find("authorization");
  if (header == r.http.headers.end() || !header->second.starts_with("Bearer ")) {
    auto response = ErrorResponse(401, "Unauthenticated", "a bearer token is required");
    response.headers["WWW-Authenticate"] = "Bearer";
    return response;
  }
  auto token = store_.FindToken(HashToken(header->second.substr(7)));
  if (!token) {
    if (token.error().kind != ErrorKind::kNotFound) return ErrorResponse(token.error());
    auto response = ErrorResponse(401, "Unauthenticated", "the token is not valid");
    response.headers["WWW-Authenticate"] = "Bearer error=\"invalid_token\"";
    return response;
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
  return body(Caller{org, token->id});
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
        Invalid("$", "must be valid JSON at most " + std::to_string(kMaxJsonDepth) + " levels deep",
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
