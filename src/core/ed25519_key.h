// Ed25519 keys in PEM (RFC 8410): public keys as a kubernetes-agent runner's `key` gives them
// (SubjectPublicKeyInfo with OID 1.3.101.112), private keys as its agent holds them (PKCS#8, as
// `openssl genpkey -algorithm ed25519` and `berth-agent keygen` write them).
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
std::string Ed25519PublicKeyPem(std::string_view raw);

// The 32-byte seed (RFC 8032) of a "PRIVATE KEY" block; as strict as the public one.
Result<std::string> ParseEd25519PrivateKeyPem(std::string_view pem);
std::string Ed25519PrivateKeyPem(std::string_view seed);

}  // namespace berth
