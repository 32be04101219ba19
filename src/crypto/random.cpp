// RAND_bytes aborts the process rather than return weak bytes: there is no fallback.
#include "crypto/random.h"

#include <openssl/rand.h>

#include <cstdlib>

#include "core/base64.h"

namespace berth::crypto {

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::abort();  // no entropy: nothing secret can be made safely
  }
  return out;
}

std::string RandomToken(size_t n) {
  return Base64Encode(RandomBytes(n), Base64Alphabet::kUrlNoPadding);
}

std::string RandomId(size_t n) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string bytes = RandomBytes(n);
  std::string id;
  for (char b : bytes) id += kAlphabet[static_cast<unsigned char>(b) % 36];
  return id;
}

}  // namespace berth::crypto
