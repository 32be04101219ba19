#include "server/oidc/oidc_issuer.h"

#include "crypto/random.h"
#include "crypto/x509.h"

namespace berth::server {
namespace {

using nlohmann::json;

net::ServerResponse JsonReply(const json& body) {
  net::ServerResponse response{.status = 200, .body = body.dump()};
  response.headers["content-type"] = "application/json";
  // Verifiers cache these; a short time lets a new period's key be seen soon (it is published a
  // period ahead anyway).
  response.headers["cache-control"] = "public, max-age=300";
  return response;
}

}  // namespace

int64_t OidcIssuer::PeriodAt(std::chrono::system_clock::time_point when) const {
  return std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count() /
         options_.key_period.count();
}

Result<crypto::Es256Key> OidcIssuer::KeyOf(int64_t period) {
  {
    MutexLock lock(mutex_);
    if (auto found = keys_.find(period); found != keys_.end()) return found->second;
  }
  auto candidate = crypto::PrivateKey::GenerateEcP256();
  if (!candidate) return candidate.error();
  // Of berthds racing on one database, the first one's key is every one's.
  auto pem = store_.EnsureSharedSecret("oidc-key-" + std::to_string(period), candidate->pem);
  if (!pem) return pem.error();
  auto key = crypto::Es256Key::FromPem(*pem, "berth-" + std::to_string(period));
  if (!key) return key.error();
  MutexLock lock(mutex_);
  keys_.emplace(period, *key);
  // Only the keys the JWKS can still name are worth holding.
  while (keys_.size() > 4) keys_.erase(keys_.begin());
  return *key;
}

Result<json> OidcIssuer::Jwks() {
  const int64_t now = PeriodAt(clock_.Wall());
  json keys = json::array();
  for (int64_t period = now - 1; period <= now + 1; ++period) {
    auto key = KeyOf(period);
    if (!key) return key.error();
    keys.push_back(key->PublicJwk());
  }
  return Ok(json{{"keys", keys}});
}

net::ServerResponse OidcIssuer::Handle(const net::ServerRequest& request) {
  if (request.method != "GET" && request.method != "HEAD")
    return {.status = 405, .headers = {{"allow", "GET, HEAD"}}};
  const std::string_view path =
      std::string_view(request.target).substr(0, request.target.find('?'));
  if (path == kDiscoveryPath) {
    return JsonReply({{"issuer", options_.issuer},
                      {"jwks_uri", options_.issuer + std::string(kJwksPath)},
                      {"response_types_supported", {"id_token"}},
                      {"subject_types_supported", {"public"}},
                      {"id_token_signing_alg_values_supported", {"ES256"}},
                      {"claims_supported",
                       {"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "org", "project",
                        "environment", "phase", "deployment", "run", "runner", "plan_hash"}}});
  }
  auto jwks = Jwks();
  if (!jwks) return {.status = 503, .body = "the signing keys cannot be read\n"};
  return JsonReply(*jwks);
}

Result<std::string> OidcIssuer::Mint(json claims, std::chrono::seconds lifetime) {
  const auto now = clock_.Wall();
  auto key = KeyOf(PeriodAt(now));
  if (!key) return key.error();
  const int64_t issued =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  claims["iss"] = options_.issuer;
  claims["iat"] = issued;
  claims["nbf"] = issued;
  claims["exp"] = issued + std::min(lifetime, options_.key_period).count();
  claims["jti"] = crypto::RandomToken(16);
  return key->SignJwt(claims);
}

}  // namespace berth::server
