#include "crypto/es256.h"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>

#include <memory>

#include "core/base64.h"
#include "crypto/openssl_support.h"

namespace berth::crypto {
namespace {

using nlohmann::json;

using openssl::Deleter;
using MdContext = std::unique_ptr<EVP_MD_CTX, Deleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using Signature = std::unique_ptr<ECDSA_SIG, Deleter<ECDSA_SIG, ECDSA_SIG_free>>;

constexpr size_t kCoordinateBytes = 32;

Error Failed(const std::string& what) { return openssl::LastError("ES256 " + what); }

// A P-256 private key, or why the PEM is not one.
Result<openssl::PKey> ReadKey(const std::string& pem) {
  auto key = openssl::ReadPrivateKey(pem);
  if (!key) return key.error();
  if (!EVP_PKEY_is_a(key->get(), "EC"))
    return MakeError(ErrorKind::kInvalidArgument, "not an EC key");
  char group[32] = {};
  size_t length = 0;
  if (EVP_PKEY_get_utf8_string_param(key->get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                     &length) != 1 ||
      std::string(group, length) != "prime256v1")
    return MakeError(ErrorKind::kInvalidArgument, "not a P-256 key");
  return key;
}

std::string B64(std::string_view bytes) {
  return Base64Encode(bytes, Base64Alphabet::kUrlNoPadding);
}

// A big number as exactly 32 bytes, big-endian (RFC 7518 3.4 and 6.2.1.2).
std::string Fixed(const BIGNUM* n) {
  std::string out(kCoordinateBytes, '\0');
  BN_bn2binpad(n, reinterpret_cast<unsigned char*>(out.data()), kCoordinateBytes);
  return out;
}

}  // namespace

Result<Es256Key> Es256Key::FromPem(const std::string& key_pem, std::string kid) {
  auto key = ReadKey(key_pem);
  if (!key) return key.error();
  // The public point, uncompressed: 0x04 || X || Y.
  unsigned char point[1 + 2 * kCoordinateBytes];
  size_t length = 0;
  if (EVP_PKEY_get_octet_string_param(key->get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point,
                                      &length) != 1 ||
      length != sizeof point || point[0] != 0x04)
    return Failed("public point");
  const std::string x(reinterpret_cast<const char*>(point + 1), kCoordinateBytes);
  const std::string y(reinterpret_cast<const char*>(point + 1 + kCoordinateBytes),
                      kCoordinateBytes);
  json jwk = {{"kty", "EC"}, {"crv", "P-256"}, {"x", B64(x)},   {"y", B64(y)},
              {"kid", kid},  {"use", "sig"},   {"alg", "ES256"}};
  return Es256Key(key_pem, std::move(kid), std::move(jwk));
}

Result<std::string> Es256Key::SignJwt(const json& claims) const {
  auto key = ReadKey(key_pem_);
  if (!key) return key.error();
  const json header = {{"alg", "ES256"}, {"kid", kid_}, {"typ", "JWT"}};
  const std::string input = B64(header.dump()) + "." + B64(claims.dump());
  MdContext context(EVP_MD_CTX_new());
  size_t der_length = 0;
  if (EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key->get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &der_length,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    return Failed("sign");
  std::string der(der_length, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(der.data()), &der_length,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    return Failed("sign");
  // OpenSSL gives the DER of (r, s); a JWS carries r || s, each 32 bytes.
  const auto* cursor = reinterpret_cast<const unsigned char*>(der.data());
  Signature signature(d2i_ECDSA_SIG(nullptr, &cursor, static_cast<long>(der_length)));
  if (!signature) return Failed("signature");
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(signature.get(), &r, &s);
  return input + "." + B64(Fixed(r) + Fixed(s));
}

}  // namespace berth::crypto
