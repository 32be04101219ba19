// berthd's keys for what it keeps secret at rest (deployment variables, plans, outputs, state
// versions, the run-token signing seed): AES-256-GCM, each sealed value naming the key that
// sealed it, with its column and its row as associated data (a value moved to another column or
// another row does not open). The keys live in a file outside the database, made at the first
// start (mode 0600); the first key in the file seals, every key opens. `berthd rotate-keys`
// puts a new key first, reseals every value with it and drops the keys nothing uses.
//
// Whoever can write the database but not the key file can neither plant a value (a value in
// clear is refused) nor swap two (a value opens only in its own row). Format v1 bound a value
// to its column alone; it opens only under a key from before v2 (a line without "rows" in the
// key file), so once rotate-keys has dropped those keys, an old v1 value copied from a backup
// opens nowhere.
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

// What a sealed value is bound to: the column ("table.column") and the row's key.
struct SealBinding {
  std::string_view column;
  std::string row;  // RowOf(the row's primary key)
};
// A row's key as one string; each part is length-prefixed, so no two keys give the same one.
std::string RowOf(const std::vector<std::string_view>& parts);

class KeyRing {
 public:
  // The key file, made with one new key when it does not exist.
  static Result<std::shared_ptr<KeyRing>> OpenOrCreate(const std::filesystem::path& file);

  // "berth-sealed:v2:KEY_ID:" and base64 of nonce, ciphertext and tag.
  std::string Seal(std::string_view plaintext, const SealBinding& binding) const EXCLUDES(mutex_);
  // A sealed value's plaintext. A key this ring does not hold makes it read its file again
  // (another berthd, or rotate-keys, may have added it). A value in clear, a tampered one, one
  // of another column or row, or a v1 value under a key made for v2 is an error.
  Result<std::string> Open(std::string_view stored, const SealBinding& binding) const
      EXCLUDES(mutex_);

  static bool IsSealed(std::string_view stored);
  // Sealed in today's format (bound to its row).
  static bool IsRowBound(std::string_view stored);
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
    // Made since format v2: opens no v1 value. Written "rows" after the secret in the file.
    bool rows_only = true;
  };
  explicit KeyRing(std::filesystem::path file) : file_(std::move(file)) {}
  static Key NewKey();
  Result<void> Load() const REQUIRES(mutex_);
  Result<void> Save() const REQUIRES(mutex_);
  const Key* Find(const std::string& id) const REQUIRES(mutex_);  // null: not in the ring

  const std::filesystem::path file_;
  mutable Mutex mutex_;
  mutable std::vector<Key> keys_ GUARDED_BY(mutex_);  // the first seals
};

}  // namespace berth::crypto
