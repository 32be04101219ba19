#include "crypto/key_ring.h"

#include <openssl/evp.h>

#include <sstream>

#include "core/base64.h"
#include "crypto/random.h"
#include "sys/files.h"

namespace berth::crypto {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "berth-sealed:v1:";
constexpr size_t kKeyBytes = 32, kNonceBytes = 12, kTagBytes = 16;

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

// nonce | ciphertext | tag
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
    return MakeError(ErrorKind::kInternal, "a sealed value is too short");
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
    return MakeError(ErrorKind::kInternal,
                     "a sealed value does not open: altered, or moved from another column");
  return out;
}

}  // namespace

Result<std::shared_ptr<KeyRing>> KeyRing::OpenOrCreate(const fs::path& file) {
  std::shared_ptr<KeyRing> ring(new KeyRing(file));
  MutexLock lock(ring->mutex_);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    if (auto loaded = ring->Load(); !loaded) return loaded.error();
    return ring;
  }
  ring->keys_.push_back({"k" + RandomId(8), RandomBytes(kKeyBytes)});
  if (auto saved = ring->Save(); !saved) return saved.error();
  return ring;
}

Result<void> KeyRing::Load() const {
  auto text = sys::ReadFile(file_);
  if (!text) return text.error();
  std::vector<Key> keys;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') continue;
    size_t space = line.find(' ');
    auto secret = Base64Decode(space == std::string::npos ? "" : line.substr(space + 1));
    if (space == std::string::npos || !secret || secret->size() != kKeyBytes)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "the encryption key file has a line that is not `ID BASE64-KEY` "
                       "(32 bytes)",
                       file_.string());
    keys.push_back({line.substr(0, space), std::move(*secret)});
  }
  if (keys.empty())
    return MakeError(ErrorKind::kFailedPrecondition, "the encryption key file holds no key",
                     file_.string());
  keys_ = std::move(keys);
  return {};
}

Result<void> KeyRing::Save() const {
  std::string text =
      "# berthd's encryption keys: the first seals, every one opens. Lose this file and what\n"
      "# berthd sealed with it is lost too: keep a copy where the database's backups are not.\n";
  for (const Key& key : keys_) text += key.id + " " + Base64Encode(key.secret) + "\n";
  return sys::WriteFileAtomic(file_, text);
}

std::string KeyRing::Seal(std::string_view plaintext, std::string_view context) const {
  MutexLock lock(mutex_);
  const Key& key = keys_.front();
  return std::string(kPrefix) + key.id + ":" +
         Base64Encode(AesGcmSeal(key.secret, plaintext, context));
}

bool KeyRing::IsSealed(std::string_view stored) { return stored.starts_with(kPrefix); }

std::string KeyRing::KeyIdOf(std::string_view stored) {
  if (!IsSealed(stored)) return "";
  std::string_view rest = stored.substr(kPrefix.size());
  return std::string(rest.substr(0, rest.find(':')));
}

Result<std::string> KeyRing::Open(std::string_view stored, std::string_view context) const {
  if (!IsSealed(stored)) return std::string(stored);
  std::string id = KeyIdOf(stored);
  std::string_view rest = stored.substr(kPrefix.size() + id.size());
  if (!rest.starts_with(':')) return MakeError(ErrorKind::kInternal, "a sealed value is cut");
  auto sealed = Base64Decode(rest.substr(1));
  if (!sealed) return MakeError(ErrorKind::kInternal, "a sealed value is not base64");
  MutexLock lock(mutex_);
  const Key* key = Find(id);
  if (!key) {
    if (auto loaded = Load(); !loaded) return loaded.error();
    key = Find(id);
  }
  if (!key)
    return MakeError(ErrorKind::kFailedPrecondition, "a value is sealed with key " + id +
                                                         ", which the encryption key file " +
                                                         file_.string() + " does not hold");
  return AesGcmOpen(key->secret, *sealed, context);
}

const KeyRing::Key* KeyRing::Find(const std::string& id) const {
  for (const Key& key : keys_) {
    if (key.id == id) return &key;
  }
  return nullptr;
}

std::string KeyRing::CurrentKeyId() const {
  MutexLock lock(mutex_);
  return keys_.front().id;
}

Result<void> KeyRing::AddCurrentKey() {
  MutexLock lock(mutex_);
  keys_.insert(keys_.begin(), Key{"k" + RandomId(8), RandomBytes(kKeyBytes)});
  return Save();
}

Result<void> KeyRing::KeepOnly(const std::set<std::string>& used) {
  MutexLock lock(mutex_);
  std::vector<Key> kept = {keys_.front()};
  for (size_t i = 1; i < keys_.size(); ++i) {
    if (used.contains(keys_[i].id)) kept.push_back(keys_[i]);
  }
  keys_ = std::move(kept);
  return Save();
}

}  // namespace berth::crypto
