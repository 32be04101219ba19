// Compact JWS signed with EdDSA over Ed25519 (RFC 7515, RFC 8037): berthd's per-run tokens.
// No packaged JWT library does EdDSA; this is the smallest piece that does, strict on input:
// the header must be exactly {"alg":"EdDSA","typ":"JWT"} (no "none", no key hints), every part
// base64url without padding, the payload a JSON object.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/mutex.h"

namespace berth::crypto {

class Ed25519Signer {
 public:
  static Result<Ed25519Signer> Generate();
  // From a 32-byte seed (RFC 8032 section 5.1.5), as kept on disk.
  static Result<Ed25519Signer> FromSeed(std::string_view seed);

  const std::string& Seed() const { return seed_; }
  const std::string& PublicKey() const { return public_key_; }  // the 32 raw bytes
  Result<std::string> Sign(std::string_view message) const;

 private:
  Ed25519Signer(std::string seed, std::string public_key)
      : seed_(std::move(seed)), public_key_(std::move(public_key)) {}
  std::string seed_;
  std::string public_key_;
};

// header.payload.signature for the claims.
Result<std::string> SignJws(const nlohmann::json& claims, const Ed25519Signer& signer);

class Jws {
 public:
  // The token's shape only: three base64url parts, the EdDSA header, a JSON object payload.
  static Result<Jws> Parse(std::string_view token);
  // The signature over header.payload by public_key (32 raw bytes).
  Result<void> Verify(std::string_view public_key) const;
  const nlohmann::json& Claims() const { return claims_; }
  // A claim of its type, or "" and 0 when it is absent or of another type.
  std::string TextClaim(const char* name) const;
  int64_t IntClaim(const char* name) const;

 private:
  Jws() = default;
  std::string signing_input_;
  std::string signature_;
  nlohmann::json claims_;
};

// A run token's claims: sub (the run), aud, iat, exp (seconds since the epoch), jti, and scope
// (what the run may touch: its environment, "org/project/env").
struct RunToken {
  std::string run_id;
  std::string audience;
  int64_t issued_at = 0;
  int64_t expires_at = 0;
  std::string id;
  std::string scope;
};

// The audience of every run token berthd mints.
inline constexpr std::string_view kRunTokenAudience = "berth-run";

Result<std::string> MintRunToken(const RunToken& token, const Ed25519Signer& signer);
// Verified signature, the expected audience, not expired at now (seconds), a run id; every
// failure is kUnauthenticated with the reason.
Result<RunToken> VerifyRunToken(std::string_view token, std::string_view public_key,
                                std::string_view audience, int64_t now);

// VerifyRunToken with one key, remembering the tokens whose signature verified: a run sends
// the same token with each of its requests (dozens a deployment), and an Ed25519 verification
// cost more than most requests it guarded. What is remembered is the signature's verdict
// only: audience and expiry are checked at every call. Thread-safe.
class RunTokenVerifier {
 public:
  explicit RunTokenVerifier(std::string public_key) : public_key_(std::move(public_key)) {}
  Result<RunToken> Verify(std::string_view token, std::string_view audience, int64_t now) const
      EXCLUDES(mutex_);

 private:
  // Tokens outlive their runs by minutes at most: past this many, it starts again.
  static constexpr size_t kMaxRemembered = 4096;
  std::string public_key_;
  mutable Mutex mutex_;
  // By the SHA-256 of the token, never the token: a lookup's comparisons take longer the more
  // of a key a guess shares, and a guess that shares a digest's first bytes tells nothing of a
  // token.
  mutable std::map<std::string, RunToken, std::less<>> verified_ GUARDED_BY(mutex_);
};

}  // namespace berth::crypto
