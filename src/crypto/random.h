// Cryptographically strong random values from OpenSSL's generator.
#pragma once

#include <string>

namespace berth::crypto {

std::string RandomBytes(size_t n);
// n random bytes as unpadded base64url: tokens and secrets.
std::string RandomToken(size_t n = 32);
// A short random id in [a-z0-9] (n characters), for objects the caller did not name.
std::string RandomId(size_t n = 10);

}  // namespace berth::crypto
