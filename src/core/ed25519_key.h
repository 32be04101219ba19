// Ed25519 public keys in PEM (RFC 8410 section 4: SubjectPublicKeyInfo with OID 1.3.101.112),
// as a kubernetes-agent runner's `key` gives them.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

struct Ed25519PublicKey {
  std::string raw;  // the 32 key bytes
};

// Strict: one "PUBLIC KEY" block, valid base64, exactly the 44-byte Ed25519 structure.
Result<Ed25519PublicKey> ParseEd25519PublicKeyPem(std::string_view pem);

}  // namespace berth
