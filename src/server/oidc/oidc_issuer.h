// berthd as an OpenID Connect issuer (docs/oidc.md): it serves its discovery document and its
// keys (JWKS) at its public URL, and signs short-lived ID tokens with ES256 that a cloud's STS,
// a Kubernetes API server or Vault verifies against those keys, so that runs get credentials by
// federation and berth stores none.
//
// Keys rotate by period: each period (a week by default) has its own key, made by the first
// berthd that needs it and kept sealed in the store (every replica signs with the same one).
// The JWKS publishes the previous period's key (its tokens are still valid), the current one and
// the next one (so a verifier's cached JWKS knows a key before it signs anything); a token never
// outlives the period after the one that signed it.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"
#include "core/mutex.h"
#include "crypto/es256.h"
#include "net/http_server.h"
#include "store/store.h"

namespace berth::server {

inline constexpr std::string_view kDiscoveryPath = "/.well-known/openid-configuration";
inline constexpr std::string_view kJwksPath = "/.well-known/jwks";

struct OidcIssuerOptions {
  std::string issuer;  // https://..., berthd's public URL: the tokens' iss
  std::chrono::seconds key_period{std::chrono::hours(24 * 7)};
};

class OidcIssuer {
 public:
  OidcIssuer(store::Store& store, Clock& clock, OidcIssuerOptions options)
      : store_(store), clock_(clock), options_(std::move(options)) {}

  static bool Serves(const std::string& target) {
    const std::string_view path = std::string_view(target).substr(0, target.find('?'));
    return path == kDiscoveryPath || path == kJwksPath;
  }
  net::ServerResponse Handle(const net::ServerRequest& request);

  const std::string& Issuer() const { return options_.issuer; }
  // claims (sub, aud and any other) signed with the current key, with iss, iat, nbf, exp and
  // jti added; lifetime is cut to one key period.
  Result<std::string> Mint(nlohmann::json claims, std::chrono::seconds lifetime);

 private:
  int64_t PeriodAt(std::chrono::system_clock::time_point when) const;
  Result<crypto::Es256Key> KeyOf(int64_t period) EXCLUDES(mutex_);
  Result<nlohmann::json> Jwks();

  store::Store& store_;
  Clock& clock_;
  const OidcIssuerOptions options_;
  Mutex mutex_;
  std::map<int64_t, crypto::Es256Key> keys_ GUARDED_BY(mutex_);
};

}  // namespace berth::server
