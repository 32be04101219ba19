// What berth's OpenSSL code shares inside crypto/: owning handles, the library's last error as
// an Error, and a PEM private key read into a key handle.
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>

#include "core/error.h"

namespace berth::crypto::openssl {

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

// what failed, with OpenSSL's reason (its error queue is cleared).
inline Error LastError(const std::string& what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return MakeError(ErrorKind::kInternal, what + ": " + text);
}

inline Result<PKey> ReadPrivateKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return LastError("private key");
  return key;
}

}  // namespace berth::crypto::openssl
