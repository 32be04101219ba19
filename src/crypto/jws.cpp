#include "crypto/jws.h"

#include <openssl/evp.h>

#include <memory>

#include "core/base64.h"
#include "core/bounded_json.h"
#include "crypto/digest.h"
#include "crypto/random.h"

namespace berth::crypto {
namespace {

using nlohmann::json;

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

constexpr size_t kKeyBytes = 32;
constexpr size_t kSignatureBytes = 64;
// The only header berth writes or accepts (RFC 8037 section 3.1).
constexpr std::string_view kHeader = R"({"alg":"EdDSA","typ":"JWT"})";

Error Unauthenticated(std::string message) {
  return MakeError(ErrorKind::kUnauthenticated, std::move(message));
}

std::string B64(std::string_view data) { return Base64Encode(data, Base64Alphabet::kUrlNoPadding); }

}  // namespace

Result<Ed25519Signer> Ed25519Signer::Generate() { return FromSeed(RandomBytes(kKeyBytes)); }

Result<Ed25519Signer> Ed25519Signer::FromSeed(std::string_view seed) {
  if (seed.size() != kKeyBytes)
    return MakeError(ErrorKind::kInvalidArgument, "an Ed25519 seed is 32 bytes");
  Pkey key(EVP_PKEY_new_raw_private_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(seed.data()), seed.size()));
  if (!key) return MakeError(ErrorKind::kInternal, "cannot load the Ed25519 key");
  std::string public_key(kKeyBytes, '\0');
  size_t length = public_key.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(public_key.data()),
                                  &length) != 1 ||
      length != kKeyBytes)
    return MakeError(ErrorKind::kInternal, "cannot derive the Ed25519 public key");
  return Ed25519Signer(std::string(seed), std::move(public_key));
}

Result<std::string> Ed25519Signer::Sign(std::string_view message) const {
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                        reinterpret_cast<const unsigned char*>(seed_.data()),
                                        seed_.size()));
  MdCtx ctx(EVP_MD_CTX_new());
  std::string signature(kSignatureBytes, '\0');
  size_t length = signature.size();
  if (!key || !ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    return MakeError(ErrorKind::kInternal, "Ed25519 signing failed");
  return signature;
}

Result<std::string> SignJws(const json& claims, const Ed25519Signer& signer) {
  std::string input = B64(kHeader) + "." + B64(claims.dump());
  auto signature = signer.Sign(input);
  if (!signature) return signature.error();
  return input + "." + B64(*signature);
}

Result<Jws> Jws::Parse(std::string_view token) {
  size_t first = token.find('.');
  size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return Unauthenticated("a token is three base64url parts joined by dots");
  auto header = Base64Decode(token.substr(0, first), Base64Alphabet::kUrlNoPadding);
  auto payload =
      Base64Decode(token.substr(first + 1, second - first - 1), Base64Alphabet::kUrlNoPadding);
  auto signature = Base64Decode(token.substr(second + 1), Base64Alphabet::kUrlNoPadding);
  if (!header || !payload || !signature) return Unauthenticated("a token part is not base64url");
  json parsed_header = ParseBoundedJsonOrNull(*header);
  if (parsed_header != json::parse(kHeader))
    return Unauthenticated("the token's header must be {\"alg\":\"EdDSA\",\"typ\":\"JWT\"}");
  Jws jws;
  jws.claims_ = ParseBoundedJsonOrNull(*payload);
  if (!jws.claims_.is_object()) return Unauthenticated("the token's claims are not a JSON object");
  if (signature->size() != kSignatureBytes)
    return Unauthenticated("the token's signature is not 64 bytes");
  jws.signing_input_ = std::string(token.substr(0, second));
  jws.signature_ = std::move(*signature);
  return jws;
}

Result<void> Jws::Verify(std::string_view public_key) const {
  if (public_key.size() != kKeyBytes)
    return MakeError(ErrorKind::kInternal, "an Ed25519 public key is 32 bytes");
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(public_key.data()),
                                       public_key.size()));
  MdCtx ctx(EVP_MD_CTX_new());
  if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1)
    return MakeError(ErrorKind::kInternal, "cannot set up Ed25519 verification");
  int ok = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature_.data()), signature_.size(),
      reinterpret_cast<const unsigned char*>(signing_input_.data()), signing_input_.size());
  if (ok != 1) return Unauthenticated("the token's signature does not verify");
  return {};
}

Result<std::string> MintRunToken(const RunToken& token, const Ed25519Signer& signer) {
  return SignJws({{"sub", token.run_id},
                  {"aud", token.audience},
                  {"iat", token.issued_at},
                  {"exp", token.expires_at},
                  {"jti", token.id},
                  {"scope", token.scope}},
                 signer);
}

std::string Jws::TextClaim(const char* name) const {
  auto it = claims_.find(name);
  return it != claims_.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t Jws::IntClaim(const char* name) const {
  auto it = claims_.find(name);
  return it != claims_.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

namespace {

// The claims of a token signed by public_key, not yet checked.
Result<RunToken> SignedRunToken(std::string_view text, std::string_view public_key) {
  auto jws = Jws::Parse(text);
  if (!jws) return jws.error();
  if (auto verified = jws->Verify(public_key); !verified) return verified.error();
  return RunToken{jws->TextClaim("sub"), jws->TextClaim("aud"), jws->IntClaim("iat"),
                  jws->IntClaim("exp"),  jws->TextClaim("jti"), jws->TextClaim("scope")};
}

Result<RunToken> CheckedRunToken(RunToken token, std::string_view audience, int64_t now) {
  if (token.audience != audience) return Unauthenticated("the token is for another audience");
  if (token.expires_at == 0) return Unauthenticated("the token has no expiry");
  if (now >= token.expires_at) return Unauthenticated("the token has expired");
  if (token.run_id.empty()) return Unauthenticated("the token names no run");
  return token;
}

}  // namespace

Result<RunToken> VerifyRunToken(std::string_view text, std::string_view public_key,
                                std::string_view audience, int64_t now) {
  auto token = SignedRunToken(text, public_key);
  if (!token) return token.error();
  return CheckedRunToken(std::move(*token), audience, now);
}

Result<RunToken> RunTokenVerifier::Verify(std::string_view text, std::string_view audience,
                                          int64_t now) const {
  const std::string digest = Sha256Bytes(text);
  {
    MutexLock lock(mutex_);
    if (auto found = verified_.find(digest); found != verified_.end())
      return CheckedRunToken(found->second, audience, now);
  }
  auto token = SignedRunToken(text, public_key_);
  if (!token) return token.error();
  {
    MutexLock lock(mutex_);
    if (verified_.size() >= kMaxRemembered) verified_.clear();
    verified_.emplace(digest, *token);
  }
  return CheckedRunToken(std::move(*token), audience, now);
}

}  // namespace berth::crypto
