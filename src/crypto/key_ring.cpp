#include "crypto/key_ring.h"

#include <sstream>

#include "core/base64.h"
#include "crypto/aes_gcm.h"
#include "crypto/random.h"
#include "sys/files.h"

namespace berth::crypto {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "berth-sealed:v1:";
constexpr size_t kKeyBytes = 32;

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
  auto opened = AesGcmOpen(key->secret, *sealed, context);
  if (!opened)
    return MakeError(ErrorKind::kInternal,
                     "a sealed value does not open: altered, or moved from another column");
  return opened;
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
