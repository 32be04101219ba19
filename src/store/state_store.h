// TF state kept by berthd's own backend: one state per key (an environment), every version
// kept (a deletion is a version too), and a lock with who holds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::store {

struct StateVersion {
  int64_t version = 0;  // 1, 2, ... per key
  int64_t size = 0;
  std::string sha256;      // of the content, hex
  std::string run_id;      // who wrote it ("" for a person through the API)
  int64_t created_at = 0;  // milliseconds since the epoch
  bool deleted = false;    // a deletion: the state is empty from here
};

struct StateLock {
  std::string id;    // the lock ID tofu chose
  std::string info;  // tofu's LockInfo JSON, as sent (who, operation, when)
  int64_t created_at = 0;
  std::string run_id;  // the run whose token took it ("" for one taken otherwise)
};

// A lock released because its run ended.
struct ReleasedLock {
  std::string key;
  std::string id;
};

// Something done to a state by hand, kept with it.
struct StateHistoryEntry {
  std::string action;  // "unlock", "rollback"
  std::string actor;   // "token <id>"
  std::string detail;  // what, and why when a reason was given
  int64_t at = 0;      // milliseconds since the epoch
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  // The newest content; kNotFound when there is none (never written, or deleted).
  virtual Result<std::string> Current(const std::string& key) = 0;
  // Writes a new version. A locked state takes writes only with its lock's id (kConflict). The
  // same content from the same run as the newest version is that version, not a new one: a
  // write retried after its answer was lost (a cut connection) stores nothing twice.
  virtual Result<StateVersion> Put(const std::string& key, const std::string& content,
                                   const std::string& lock_id, const std::string& run_id) = 0;
  // Writes a new version only if the state is unlocked and its newest version is still
  // newest_version (0: none yet); kConflict otherwise. For a write by berthd itself, decided
  // on what it read.
  virtual Result<StateVersion> PutOver(const std::string& key, int64_t newest_version,
                                       const std::string& content, const std::string& run_id) = 0;
  // Ends the state with a deletion version (the history stays).
  virtual Result<StateVersion> Delete(const std::string& key, const std::string& lock_id,
                                      const std::string& run_id) = 0;
  virtual Result<std::vector<StateVersion>> Versions(const std::string& key) = 0;  // oldest first
  // One version's content; kNotFound for a deletion or a version that never was.
  virtual Result<std::string> Version(const std::string& key, int64_t version) = 0;
  // kConflict when held (Holder says by whom), unless by this very lock of this run: a retry.
  virtual Result<void> Lock(const std::string& key, const StateLock& lock) = 0;
  virtual Result<StateLock> Holder(const std::string& key) = 0;  // kNotFound when free
  // lock_id must be the holder's (kConflict otherwise); empty: force, whoever holds it.
  virtual Result<void> Unlock(const std::string& key, const std::string& lock_id) = 0;
  virtual Result<void> Record(const std::string& key, const StateHistoryEntry& entry) = 0;
  virtual Result<std::vector<StateHistoryEntry>> History(const std::string& key,
                                                         int limit) = 0;  // newest first
  // Removes the key's versions beyond its newest keep_last (at least 1) that were written
  // before `before` (milliseconds since the epoch); how many.
  virtual Result<int64_t> PruneVersions(const std::string& key, int64_t keep_last,
                                        int64_t before) = 0;
  // The keys with more than one version: those a pruning may shorten.
  virtual Result<std::vector<std::string>> KeysWithHistory() = 0;
  // Releases every lock the run holds.
  virtual Result<std::vector<ReleasedLock>> ReleaseLocksOf(const std::string& run_id) = 0;
};

}  // namespace berth::store
