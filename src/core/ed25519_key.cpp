// The DER of an Ed25519 SubjectPublicKeyInfo, and of its PKCS#8 private key, is fixed: a short
// prefix and the 32 key bytes.
#include "core/ed25519_key.h"

#include <algorithm>

#include "core/base64.h"

namespace berth {
namespace {

// SEQUENCE(42) { SEQUENCE(5) { OID 1.3.101.112 } BIT STRING(33) { 0 unused bits, key } }
constexpr unsigned char kPublicPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                           0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
// SEQUENCE(46) { INTEGER 0, SEQUENCE(5) { OID 1.3.101.112 }, OCTET STRING(34) { OCTET
// STRING(32) { seed } } } (RFC 8410 section 7, without the optional public key)
constexpr unsigned char kPrivatePrefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                            0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};

Error Invalid(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, "must be " + std::move(rule));
}

// The 32 bytes after prefix in the one PEM block labelled label.
template <size_t N>
Result<std::string> KeyBytes(std::string_view pem, std::string_view label,
                             const unsigned char (&prefix)[N], std::string_view what) {
  const std::string begin_line = "-----BEGIN " + std::string(label) + "-----";
  const std::string end_line = "-----END " + std::string(label) + "-----";
  size_t begin = pem.find(begin_line);
  size_t end = pem.find(end_line);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return Invalid("a PEM block \"" + std::string(label) + "\"");
  }
  if (pem.find(begin_line, begin + 1) != std::string_view::npos)
    return Invalid("exactly one PEM block");
  std::string body;
  for (char c : pem.substr(begin + begin_line.size(), end - begin - begin_line.size())) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') body += c;
  }
  auto der = Base64Decode(body);
  if (!der) return Invalid("a PEM block with valid base64");
  if (der->size() != N + 32 ||
      !std::equal(std::begin(prefix), std::end(prefix), der->begin(),
                  [](unsigned char a, char b) { return a == static_cast<unsigned char>(b); })) {
    return Invalid(std::string(what));
  }
  return der->substr(N);
}

template <size_t N>
std::string Pem(std::string_view label, const unsigned char (&prefix)[N], std::string_view key) {
  std::string der(reinterpret_cast<const char*>(prefix), N);
  der += key;
  return "-----BEGIN " + std::string(label) + "-----\n" + Base64Encode(der) + "\n-----END " +
         std::string(label) + "-----\n";
}

}  // namespace

Result<Ed25519PublicKey> ParseEd25519PublicKeyPem(std::string_view pem) {
  auto raw = KeyBytes(pem, "PUBLIC KEY", kPublicPrefix, "an Ed25519 public key (RFC 8410)");
  if (!raw) return raw.error();
  return Ed25519PublicKey{std::move(*raw)};
}

std::string Ed25519PublicKeyPem(std::string_view raw) {
  return Pem("PUBLIC KEY", kPublicPrefix, raw);
}

Result<std::string> ParseEd25519PrivateKeyPem(std::string_view pem) {
  return KeyBytes(pem, "PRIVATE KEY", kPrivatePrefix,
                  "an Ed25519 private key (PKCS#8, RFC 8410 section 7)");
}

std::string Ed25519PrivateKeyPem(std::string_view seed) {
  return Pem("PRIVATE KEY", kPrivatePrefix, seed);
}

}  // namespace berth
