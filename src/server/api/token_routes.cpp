#include "server/api/token_routes.h"

#include <nlohmann/json.hpp>

#include "core/schema.h"
#include "server/api/api.h"
#include "server/api/session_credentials.h"

namespace berth::server {
namespace {

using nlohmann::json;

// Long-lived secrets are what leaks: a token lives a year at most unless it never expires.
constexpr std::chrono::seconds kLongestExpiry = std::chrono::hours(24 * 366);

json TokenJson(const store::ApiToken& t) {
  return {{"id", t.id},
          {"description", t.description},
          {"scopes", t.scopes.Names()},
          {"created_at", ApiTime(t.created_at)},
          {"expires_at", t.expires_at == 0 ? json(nullptr) : json(ApiTime(t.expires_at))},
          {"created_by", t.created_by.empty() ? json(nullptr) : json(t.created_by)}};
}

}  // namespace

TokenRoutes::TokenRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                         Clock& clock)
    : store_(store), authorized_(authorized), clock_(clock) {
  auto add = [&](const std::string& method, const std::string& path,
                 net::ServerResponse (TokenRoutes::*handler)(const RouteRequest&, const Caller&)
                     const) {
    router.Add(method, path, [this, handler](const RouteRequest& r) {
      return authorized_(r, Scope::kAdmin, [&](const Caller& c) { return (this->*handler)(r, c); });
    });
  };
  add("POST", "/orgs/{org}/tokens", &TokenRoutes::Create);
  add("GET", "/orgs/{org}/tokens", &TokenRoutes::List);
  add("DELETE", "/orgs/{org}/tokens/{id}", &TokenRoutes::Revoke);
}

net::ServerResponse TokenRoutes::Create(const RouteRequest& r, const Caller& c) const {
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  static const Schema kSchema = Schema::Object({
      Required("scopes", Schema::ArrayOf(Schema::String())),
      Optional("description", std::move(Schema::String().MaxLength(256))),
      Optional("expires_in_seconds",
               std::move(Schema::Integer()
                             .Range(60, kLongestExpiry.count())
                             .Doc("how long it lives, 1 minute to 366 days; none: until revoked"))),
  });
  auto valid = ValidateWith(kSchema, std::move(*body));
  if (!valid) return ErrorResponse(valid.error());
  auto scopes = Scopes::Parse((*valid)["scopes"].get<std::vector<std::string>>(), "$.scopes");
  if (!scopes) return ErrorResponse(scopes.error());
  store::ApiToken token{.org_id = c.org,
                        .description = valid->value("description", ""),
                        .scopes = *scopes,
                        .created_by = c.token_id};
  if (valid->contains("expires_in_seconds"))
    token.expires_at = clock_.WallMillis() + (*valid)["expires_in_seconds"].get<int64_t>() * 1000;
  auto secret = IssueToken(store_, token);
  if (!secret) return ErrorResponse(secret.error());
  json out = TokenJson(secret->first);
  out["secret"] = secret->second;  // shown this once: the store keeps its hash only
  return JsonResponse(201, out.dump());
}

net::ServerResponse TokenRoutes::List(const RouteRequest&, const Caller& c) const {
  auto tokens = store_.ListTokens(c.org);
  if (!tokens) return ErrorResponse(tokens.error());
  json items = json::array();
  for (const auto& t : *tokens) items.push_back(TokenJson(t));
  return JsonResponse(200, json{{"items", items}}.dump());
}

net::ServerResponse TokenRoutes::Revoke(const RouteRequest& r, const Caller& c) const {
  const std::string& id = r.params.at("id");
  if (auto deleted = store_.DeleteToken(c.org, id); !deleted) return ErrorResponse(deleted.error());
  // The browser sessions and login codes it made go with it.
  auto tokens = store_.ListTokens(c.org);
  if (!tokens) return ErrorResponse(tokens.error());
  for (const store::ApiToken& t : *tokens) {
    if (t.created_by == id && !t.id.starts_with(kApiTokenIdPrefix)) {
      auto deleted = store_.DeleteToken(c.org, t.id);
      if (!deleted && deleted.error().kind != ErrorKind::kNotFound)
        return ErrorResponse(deleted.error());
    }
  }
  return net::ServerResponse{.status = 204};
}

}  // namespace berth::server
