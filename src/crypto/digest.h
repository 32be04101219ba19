// SHA-256 and HMAC-SHA256 (RFC 2104), hex-encoded: inputs hashes, plan hashes, token hashes.
#pragma once

#include <string>
#include <string_view>

namespace berth::crypto {

std::string Sha256Hex(std::string_view data);
// The 32 bytes themselves (tofu's "h1:" package hash is their base64).
std::string Sha256Bytes(std::string_view data);
// Bytes as lowercase hex digits.
std::string HexEncode(std::string_view bytes);
std::string HmacSha256Hex(std::string_view key, std::string_view data);
// The 32 bytes themselves: AWS SigV4 derives its signing key by a chain of them.
std::string HmacSha256(std::string_view key, std::string_view data);
// Raw HMAC-SHA1: only to read OpenSSH's hashed known_hosts names, which are made with it.
std::string HmacSha1(std::string_view key, std::string_view data);
// SHA-256 of data given in pieces (a download checked against its digest as it arrives).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  std::string HexDigest();  // once

 private:
  struct State;
  State* state_;
};

// Constant-time comparison for secrets and their digests.
bool EqualConstantTime(std::string_view a, std::string_view b);

}  // namespace berth::crypto
