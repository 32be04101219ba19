#include "crypto/aes_gcm.h"

#include <openssl/evp.h>

#include "crypto/random.h"

namespace berth::crypto {
namespace {

constexpr size_t kNonceBytes = 12, kTagBytes = 16;

struct CipherContext {
  CipherContext() : ctx(EVP_CIPHER_CTX_new()) {}
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
  CipherContext(const CipherContext&) = delete;
  CipherContext& operator=(const CipherContext&) = delete;
  EVP_CIPHER_CTX* ctx;
};

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

}  // namespace

std::string AesGcmSeal(std::string_view key, std::string_view plaintext, std::string_view aad) {
  std::string out = RandomBytes(kNonceBytes);
  out.resize(kNonceBytes + plaintext.size() + kTagBytes);
  CipherContext c;
  int n = 0;
  bool ok = c.ctx && EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, Bytes(key),
                                        Bytes(std::string_view(out).substr(0, kNonceBytes))) == 1;
  ok = ok && EVP_EncryptUpdate(c.ctx, nullptr, &n, Bytes(aad), static_cast<int>(aad.size())) == 1;
  ok = ok && EVP_EncryptUpdate(c.ctx, Bytes(out) + kNonceBytes, &n, Bytes(plaintext),
                               static_cast<int>(plaintext.size())) == 1;
  ok = ok && EVP_EncryptFinal_ex(c.ctx, Bytes(out) + kNonceBytes + n, &n) == 1;
  ok = ok && EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes),
                                 Bytes(out) + kNonceBytes + plaintext.size()) == 1;
  if (!ok) std::abort();  // a cipher that cannot seal: nothing secret may be written
  return out;
}

Result<std::string> AesGcmOpen(std::string_view key, std::string_view sealed,
                               std::string_view aad) {
  if (sealed.size() < kNonceBytes + kTagBytes)
    return MakeError(ErrorKind::kInvalidArgument, "sealed data is too short");
  std::string_view nonce = sealed.substr(0, kNonceBytes);
  std::string_view body = sealed.substr(kNonceBytes, sealed.size() - kNonceBytes - kTagBytes);
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  std::string out(body.size(), '\0');
  CipherContext c;
  int n = 0;
  bool ok =
      c.ctx && EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, Bytes(key), Bytes(nonce)) == 1;
  ok = ok && EVP_DecryptUpdate(c.ctx, nullptr, &n, Bytes(aad), static_cast<int>(aad.size())) == 1;
  ok = ok &&
       EVP_DecryptUpdate(c.ctx, Bytes(out), &n, Bytes(body), static_cast<int>(body.size())) == 1;
  ok = ok && EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                                 tag.data()) == 1;
  ok = ok && EVP_DecryptFinal_ex(c.ctx, Bytes(out) + n, &n) == 1;
  if (!ok)
    return MakeError(ErrorKind::kInvalidArgument,
                     "sealed data does not open: altered, or another key or associated data");
  return out;
}

}  // namespace berth::crypto
