// ID tokens signed with ES256 (ECDSA P-256 and SHA-256, RFC 7518 3.4), the algorithm every
// verifier berth federates with accepts (Kubernetes' JWT authenticator, AWS STS, Google STS):
// berthd's OpenID Connect issuer signs with it and publishes the public half as a JWK.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace berth::crypto {

class Es256Key {
 public:
  // key_pem: a P-256 private key, PEM (PrivateKey::GenerateEcP256's).
  static Result<Es256Key> FromPem(const std::string& key_pem, std::string kid);

  const std::string& Kid() const { return kid_; }
  // {"kty":"EC","crv":"P-256","x","y","kid","use":"sig","alg":"ES256"}
  const nlohmann::json& PublicJwk() const { return jwk_; }
  // header.payload.signature, the header {"alg":"ES256","kid":KID,"typ":"JWT"}.
  Result<std::string> SignJwt(const nlohmann::json& claims) const;

 private:
  Es256Key(std::string key_pem, std::string kid, nlohmann::json jwk)
      : key_pem_(std::move(key_pem)), kid_(std::move(kid)), jwk_(std::move(jwk)) {}

  std::string key_pem_;
  std::string kid_;
  nlohmann::json jwk_;
};

}  // namespace berth::crypto
