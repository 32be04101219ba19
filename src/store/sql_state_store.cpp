// Versions are numbered per key inside a transaction that also checks the lock; the primary
// key (state_key, version) makes two concurrent writers collide instead of both winning.
#include "store/sql_state_store.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/time_format.h"
#include "crypto/digest.h"
#include "store/sealing.h"

namespace berth::store {
namespace {

Error Locked(const std::string& key, const std::string& holder_info) {
  Error error = MakeError(ErrorKind::kConflict, "the state of " + key + " is locked", holder_info);
  error.reason = "Locked";
  return error;
}

class SqlStateStore final : public StateStore {
 public:
  SqlStateStore(Pool& pool, const crypto::KeyRing* keys) : pool_(pool), keys_(keys) {}

  Result<std::string> Current(const std::string& key) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT content, version FROM state_versions WHERE state_key = $1 ORDER BY version DESC "
        "LIMIT 1",
        {key});
    if (!rows) return rows.error();
    if (rows->empty() || rows->front().IsNull(0))
      return MakeError(ErrorKind::kNotFound, "no state for " + key);
    return OpenValue(keys_, rows->front().Text(0), StateCell(key, rows->front().Int(1)));
  }

  Result<StateVersion> Put(const std::string& key, const std::string& content,
                           const std::string& lock_id, const std::string& run_id) override {
    return Write(key, &content, lock_id, run_id);
  }

  Result<int64_t> PruneVersions(const std::string& key, int64_t keep_last,
                                int64_t before) override {
    auto c = pool_.Borrow();
    return c->Execute(
        "DELETE FROM state_versions WHERE state_key = $1 AND created_at < $3 AND version <= "
        "(SELECT MAX(version) FROM state_versions WHERE state_key = $1) - $2",
        {key, std::max<int64_t>(keep_last, 1), before});
  }

  Result<std::vector<std::string>> KeysWithHistory() override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT state_key FROM state_versions GROUP BY state_key HAVING COUNT(*) > 1 ORDER BY "
        "state_key");
    if (!rows) return rows.error();
    std::vector<std::string> keys;
    for (const auto& row : *rows) keys.push_back(row.Text(0));
    return keys;
  }

  Result<StateVersion> PutOver(const std::string& key, int64_t newest_version,
                               const std::string& content, const std::string& run_id) override {
    return Write(key, &content, "", run_id, newest_version);
  }

  Result<StateVersion> Delete(const std::string& key, const std::string& lock_id,
                              const std::string& run_id) override {
    return Write(key, nullptr, lock_id, run_id);
  }

  Result<std::vector<StateVersion>> Versions(const std::string& key) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT version, size, sha256, run_id, created_at, "
        "CASE WHEN content IS NULL THEN 1 ELSE 0 END FROM state_versions "
        "WHERE state_key = $1 ORDER BY version",
        {key});
    if (!rows) return rows.error();
    std::vector<StateVersion> versions;
    for (const auto& r : *rows)
      versions.push_back({r.Int(0), r.Int(1), r.Text(2), r.Text(3), r.Int(4), r.Int(5) != 0});
    return versions;
  }

  Result<std::string> Version(const std::string& key, int64_t version) override {
    auto c = pool_.Borrow();
    auto rows = c->Query("SELECT content FROM state_versions WHERE state_key = $1 AND version = $2",
                         {key, version});
    if (!rows) return rows.error();
    if (rows->empty() || rows->front().IsNull(0))
      return MakeError(ErrorKind::kNotFound,
                       "no state version " + std::to_string(version) + " for " + key);
    return OpenValue(keys_, rows->front().Text(0), StateCell(key, version));
  }

  Result<void> Lock(const std::string& key, const StateLock& lock) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "INSERT INTO state_locks (state_key, lock_id, info, created_at, run_id) VALUES ($1, $2, "
        "$3, $4, $5) ON CONFLICT (state_key) DO NOTHING",
        {key, lock.id, lock.info, UnixMillisNow(), lock.run_id});
    if (!n) return n.error();
    if (*n == 1) return {};
    auto holder = HolderOn(*c, key);
    // The same lock asked again by the run that holds it: a retry whose answer was lost.
    if (holder && holder->id == lock.id && holder->run_id == lock.run_id) return {};
    return Locked(key, holder ? holder->info : std::string());
  }

  Result<StateLock> Holder(const std::string& key) override {
    auto c = pool_.Borrow();
    return HolderOn(*c, key);
  }

  Result<void> Unlock(const std::string& key, const std::string& lock_id) override {
    auto c = pool_.Borrow();
    auto n = lock_id.empty()
                 ? c->Execute("DELETE FROM state_locks WHERE state_key = $1", {key})
                 : c->Execute("DELETE FROM state_locks WHERE state_key = $1 AND lock_id = $2",
                              {key, lock_id});
    if (!n) return n.error();
    if (*n == 1) return {};
    auto holder = HolderOn(*c, key);
    if (!holder) return {};  // not locked: unlocking is done already
    return Locked(key, holder->info);
  }

  Result<void> Record(const std::string& key, const StateHistoryEntry& entry) override {
    constexpr int kAttempts = 5;  // two records of one state race for a position
    for (int attempt = 0;; ++attempt) {
      auto c = pool_.Borrow();
      auto n = c->Execute(
          "INSERT INTO state_history (state_key, position, action, actor, detail, at) SELECT $1, "
          "COALESCE(MAX(position), 0) + 1, $2, $3, $4, $5 FROM state_history WHERE state_key = $1",
          {key, entry.action, entry.actor, entry.detail, UnixMillisNow()});
      if (!n && n.error().kind == ErrorKind::kAlreadyExists && attempt + 1 < kAttempts) continue;
      if (!n) return n.error();
      return {};
    }
  }

  Result<std::vector<StateHistoryEntry>> History(const std::string& key, int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT action, actor, detail, at FROM state_history WHERE state_key = $1 ORDER BY "
        "position DESC LIMIT $2",
        {key, int64_t{limit}});
    if (!rows) return rows.error();
    std::vector<StateHistoryEntry> entries;
    for (const auto& r : *rows) entries.push_back({r.Text(0), r.Text(1), r.Text(2), r.Int(3)});
    return entries;
  }

  Result<std::vector<ReleasedLock>> ReleaseLocksOf(const std::string& run_id) override {
    if (run_id.empty()) return std::vector<ReleasedLock>{};  // nobody's: never all of them
    auto c = pool_.Borrow();
    auto rows = c->Query("DELETE FROM state_locks WHERE run_id = $1 RETURNING state_key, lock_id",
                         {run_id});
    if (!rows) return rows.error();
    std::vector<ReleasedLock> released;
    released.reserve(rows->size());
    for (const auto& r : *rows) released.push_back({r.Text(0), r.Text(1)});
    return released;
  }

 private:
  static Result<StateLock> HolderOn(SqlConnection& c, const std::string& key) {
    auto rows = c.Query(
        "SELECT lock_id, info, created_at, run_id FROM state_locks WHERE state_key = $1", {key});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, key + " is not locked");
    return StateLock{rows->front().Text(0), rows->front().Text(1), rows->front().Int(2),
                     rows->front().Text(3)};
  }

  // expected_newest: the version the write is decided on (kConflict when another came since).
  Result<StateVersion> Write(const std::string& key, const std::string* content,
                             const std::string& lock_id, const std::string& run_id,
                             std::optional<int64_t> expected_newest = std::nullopt) {
    auto c = pool_.Borrow();
    auto tx = Transaction::Begin(*c);
    if (!tx) return tx.error();
    auto holder = HolderOn(*c, key);
    if (holder && holder->id != lock_id) return Locked(key, holder->info);
    if (!holder && holder.error().kind != ErrorKind::kNotFound) return holder.error();
    // A write under a lock that is gone (broken by an operator, released when its run ended)
    // comes from a run that no longer holds the state: late, it must not land on top.
    if (!holder && !lock_id.empty())
      return MakeError(ErrorKind::kFailedPrecondition,
                       "the lock " + lock_id + " on " + key +
                           " is no longer held (it was broken or released): the write is refused");
    auto last = c->Query(
        "SELECT version, sha256, run_id, size, created_at, CASE WHEN content IS NULL THEN 1 ELSE "
        "0 END FROM state_versions WHERE state_key = $1 ORDER BY version DESC LIMIT 1",
        {key});
    if (!last) return last.error();
    const int64_t newest = last->empty() ? 0 : last->front().Int(0);
    if (expected_newest && newest != *expected_newest)
      return MakeError(ErrorKind::kConflict, "the state of " + key + " changed meanwhile");
    StateVersion version;
    version.version = newest + 1;
    version.size = content ? static_cast<int64_t>(content->size()) : 0;
    version.sha256 = content ? crypto::Sha256Hex(*content) : std::string();
    if (content && !last->empty() && last->front().Int(5) == 0 &&
        last->front().Text(1) == version.sha256 && last->front().Text(2) == run_id) {
      const SqlRow& same = last->front();
      return StateVersion{same.Int(0), same.Int(3), same.Text(1), same.Text(2), same.Int(4), false};
    }
    version.run_id = run_id;
    version.created_at = UnixMillisNow();
    version.deleted = content == nullptr;
    SqlValue stored = content
                          ? SqlValue(SealValue(keys_, *content, StateCell(key, version.version)))
                          : SqlValue(nullptr);
    auto n = c->Execute(
        "INSERT INTO state_versions (state_key, version, content, sha256, size, run_id, "
        "created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        {key, version.version, stored, version.sha256, version.size, run_id, version.created_at});
    if (!n && n.error().kind == ErrorKind::kAlreadyExists)
      return MakeError(ErrorKind::kConflict, "the state of " + key + " changed meanwhile");
    if (!n) return n.error();
    if (auto committed = tx->Commit(); !committed) return committed.error();
    return version;
  }

  Pool& pool_;
  const crypto::KeyRing* keys_;
};

}  // namespace

std::unique_ptr<StateStore> MakeSqlStateStore(Pool& pool, const crypto::KeyRing* keys) {
  return std::make_unique<SqlStateStore>(pool, keys);
}

}  // namespace berth::store
