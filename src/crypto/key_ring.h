// berthd's keys for what it keeps secret at rest (deployment variables, plans, outputs, state
// versions, the run-token signing seed): AES-256-GCM, each sealed value naming the key that
// sealed it, with the column it belongs to as associated data (a value moved to another
// column does not open). The keys live in a file outside the database, made at the first
// start (mode 0600); the first key in the file seals, every key opens. `berthd rotate-keys`
// puts a new key first, reseals every value with it and drops the keys nothing uses.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"

namespace berth::crypto {

class KeyRing {
 public:
  // The key file, made with one new key when it does not exist.
  static Result<std::shared_ptr<KeyRing>> OpenOrCreate(const std::filesystem::path& file);

  // "berth-sealed:v1:KEY_ID:" and base64 of nonce, ciphertext and tag.
  std::string Seal(std::string_view plaintext, std::string_view context) const EXCLUDES(mutex_);
  // A sealed value's plaintext; a value that is not sealed (written before encryption at rest)
  // as it is. A key this ring does not hold makes it read its file again (another berthd, or
  // rotate-keys, may have added it). A tampered value, or one of another column, is an error.
  Result<std::string> Open(std::string_view stored, std::string_view context) const
      EXCLUDES(mutex_);

  static bool IsSealed(std::string_view stored);
  // The id of the key that sealed stored; empty when it is not sealed.
  static std::string KeyIdOf(std::string_view stored);
  std::string CurrentKeyId() const EXCLUDES(mutex_);

  // A new key first in the file (and in this ring): it seals from now on.
  Result<void> AddCurrentKey() EXCLUDES(mutex_);
  // Drops from the file every key but the current one and those in used.
  Result<void> KeepOnly(const std::set<std::string>& used) EXCLUDES(mutex_);

 private:
  struct Key {
    std::string id;
    std::string secret;  // 32 bytes
  };
  explicit KeyRing(std::filesystem::path file) : file_(std::move(file)) {}
  Result<void> Load() const REQUIRES(mutex_);
  Result<void> Save() const REQUIRES(mutex_);
  const Key* Find(const std::string& id) const REQUIRES(mutex_);  // null: not in the ring

  const std::filesystem::path file_;
  mutable Mutex mutex_;
  mutable std::vector<Key> keys_ GUARDED_BY(mutex_);  // the first seals
};

}  // namespace berth::crypto
