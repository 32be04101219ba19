// The DER of an Ed25519 SubjectPublicKeyInfo is fixed: a 12-byte prefix and the key.
#include "core/ed25519_key.h"

#include <algorithm>

#include "core/base64.h"

namespace berth {
namespace {

// SEQUENCE(42) { SEQUENCE(5) { OID 1.3.101.112 } BIT STRING(33) { 0 unused bits, key } }
constexpr unsigned char kPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                     0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

Error Invalid(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, "must be " + std::move(rule));
}

}  // namespace

Result<Ed25519PublicKey> ParseEd25519PublicKeyPem(std::string_view pem) {
  constexpr std::string_view kBegin = "-----BEGIN PUBLIC KEY-----";
  constexpr std::string_view kEnd = "-----END PUBLIC KEY-----";
  size_t begin = pem.find(kBegin);
  size_t end = pem.find(kEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return Invalid("a PEM block \"PUBLIC KEY\"");
  }
  if (pem.find(kBegin, begin + 1) != std::string_view::npos)
    return Invalid("exactly one PEM block");
  std::string body;
  for (char c : pem.substr(begin + kBegin.size(), end - begin - kBegin.size())) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') body += c;
  }
  auto der = Base64Decode(body);
  if (!der) return Invalid("a PEM block with valid base64");
  if (der->size() != sizeof kPrefix + 32 ||
      !std::equal(std::begin(kPrefix), std::end(kPrefix), der->begin(),
                  [](unsigned char a, char b) { return a == static_cast<unsigned char>(b); })) {
    return Invalid("an Ed25519 public key (RFC 8410)");
  }
  return Ed25519PublicKey{der->substr(sizeof kPrefix)};
}

}  // namespace berth
