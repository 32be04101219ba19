#include "crypto/key_ring.h"

#include <sstream>

#include "core/base64.h"
#include "crypto/aes_gcm.h"
#include "crypto/random.h"
#include "sys/files.h"

namespace berth::crypto {
namespace {

namespace fs = std::filesystem;

// v1 bound a value to its column, v2 to its column and row.
constexpr std::string_view kPrefixV1 = "berth-sealed:v1:";
constexpr std::string_view kPrefixV2 = "berth-sealed:v2:";
constexpr size_t kPrefixSize = kPrefixV2.size();
static_assert(kPrefixV1.size() == kPrefixV2.size());
constexpr std::string_view kRowsOnlyMark = "rows";
constexpr size_t kKeyBytes = 32;

std::string AssociatedData(const SealBinding& binding) {
  std::string aad(binding.column);
  aad += '\0';
  aad += binding.row;
  return aad;
}

}  // namespace

std::string RowOf(const std::vector<std::string_view>& parts) {
  std::string row;
  for (std::string_view part : parts) {
    row += std::to_string(part.size());
    row += ':';
    row += part;
  }
  return row;
}

Result<std::shared_ptr<KeyRing>> KeyRing::OpenOrCreate(const fs::path& file) {
  std::shared_ptr<KeyRing> ring(new KeyRing(file));
  MutexLock lock(ring->mutex_);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    if (auto loaded = ring->Load(); !loaded) return loaded.error();
    return ring;
  }
  ring->keys_.push_back(NewKey());
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
    std::istringstream fields(line);
    std::string id, encoded, mark, extra;
    fields >> id >> encoded >> mark >> extra;
    auto secret = Base64Decode(encoded);
    if (!secret || secret->size() != kKeyBytes || !(mark.empty() || mark == kRowsOnlyMark) ||
        !extra.empty())
      return MakeError(ErrorKind::kFailedPrecondition,
                       "the encryption key file has a line that is not `ID BASE64-KEY [rows]` "
                       "(32 bytes)",
                       file_.string());
    keys.push_back({std::move(id), std::move(*secret), mark == kRowsOnlyMark});
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
  for (const Key& key : keys_) {
    text += key.id + " " + Base64Encode(key.secret);
    if (key.rows_only) text += " " + std::string(kRowsOnlyMark);
    text += "\n";
  }
  return sys::WriteFileAtomic(file_, text);
}

std::string KeyRing::Seal(std::string_view plaintext, const SealBinding& binding) const {
  MutexLock lock(mutex_);
  const Key& key = keys_.front();
  return std::string(kPrefixV2) + key.id + ":" +
         Base64Encode(AesGcmSeal(key.secret, plaintext, AssociatedData(binding)));
}

bool KeyRing::IsSealed(std::string_view stored) {
  return stored.starts_with(kPrefixV1) || stored.starts_with(kPrefixV2);
}

bool KeyRing::IsRowBound(std::string_view stored) { return stored.starts_with(kPrefixV2); }

std::string KeyRing::KeyIdOf(std::string_view stored) {
  if (!IsSealed(stored)) return "";
  std::string_view rest = stored.substr(kPrefixSize);
  return std::string(rest.substr(0, rest.find(':')));
}

Result<std::string> KeyRing::Open(std::string_view stored, const SealBinding& binding) const {
  if (!IsSealed(stored))
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a value in " + std::string(binding.column) +
                         " is in clear where berthd keeps values sealed: refused (one written "
                         "before encryption at rest is sealed by `berthd rotate-keys "
                         "--seal-plaintext`)");
  std::string id = KeyIdOf(stored);
  std::string_view rest = stored.substr(kPrefixSize + id.size());
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
  const bool row_bound = IsRowBound(stored);
  if (!row_bound && key->rows_only)
    return MakeError(ErrorKind::kInternal, "a value in " + std::string(binding.column) +
                                               " is sealed in format v1 under key " + id +
                                               ", which seals only v2: refused");
  auto opened = AesGcmOpen(key->secret, *sealed,
                           row_bound ? AssociatedData(binding) : std::string(binding.column));
  if (!opened)
    return MakeError(ErrorKind::kInternal, "a sealed value in " + std::string(binding.column) +
                                               " does not open: altered, or moved from another "
                                               "column or row");
  return opened;
}

KeyRing::Key KeyRing::NewKey() {
  return {.id = "k" + RandomId(8), .secret = RandomBytes(kKeyBytes), .rows_only = true};
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
  keys_.insert(keys_.begin(), NewKey());
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
