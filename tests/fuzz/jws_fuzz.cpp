// libFuzzer target: run tokens from outside. Whatever the bytes, verification gives claims or
// kUnauthenticated; it never crashes, and nothing verifies that berth's key did not sign.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crypto/jws.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto kSigner = berth::crypto::Ed25519Signer::FromSeed(std::string(32, '\x07'));
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto token = berth::crypto::VerifyRunToken(text, kSigner->PublicKey(), "berth-gateway", 1500);
  if (!token && token.error().kind != berth::ErrorKind::kUnauthenticated) std::abort();
  return 0;
}
