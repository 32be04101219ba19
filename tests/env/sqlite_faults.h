// A fault injected into a real berthd's SQLite database from another connection, as other
// processes on the same file cause it: the write lock held (a backup, the sqlite3 shell in a
// transaction) so that berthd's writes wait past their busy timeout and fail as busy.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"

namespace berth::testenv {

class SqliteFaults {
 public:
  static Result<SqliteFaults> Open(const std::filesystem::path& database);

  // Takes the database's write lock (BEGIN IMMEDIATE) and keeps it until ReleaseWriteLock.
  Result<void> HoldWriteLock();
  Result<void> ReleaseWriteLock();

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  explicit SqliteFaults(sqlite3* db) : db_(db) {}
  Result<void> Execute(const std::string& sql);

  std::unique_ptr<sqlite3, Close> db_;
};

}  // namespace berth::testenv
