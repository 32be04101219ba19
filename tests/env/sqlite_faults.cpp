#include "sqlite_faults.h"

namespace berth::testenv {

Result<SqliteFaults> SqliteFaults::Open(const std::filesystem::path& database) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  SqliteFaults faults(db);
  if (rc != SQLITE_OK)
    return MakeError(ErrorKind::kUnavailable, sqlite3_errstr(rc), database.string());
  sqlite3_busy_timeout(db, 10000);
  return faults;
}

Result<void> SqliteFaults::Execute(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return {};
  std::string why = message ? message : "sqlite3_exec failed";
  sqlite3_free(message);
  return MakeError(ErrorKind::kInternal, why, sql);
}

Result<void> SqliteFaults::HoldWriteLock() { return Execute("BEGIN IMMEDIATE"); }
Result<void> SqliteFaults::ReleaseWriteLock() { return Execute("ROLLBACK"); }

}  // namespace berth::testenv
