// SqlConnection on SQLite's C API: WAL, foreign keys, a busy timeout; $N parameters are bound
// by name, which SQLite accepts as written.
#include <sqlite3.h>

#include <map>
#include <memory>
#include <string>

#include "store/sql.h"

namespace berth::store {
namespace {

Error SqliteError(sqlite3* db, std::string_view sql) {
  int code = sqlite3_extended_errcode(db);
  ErrorKind kind = ErrorKind::kInternal;
  if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY) {
    kind = ErrorKind::kAlreadyExists;
  } else if (code == SQLITE_CONSTRAINT_FOREIGNKEY ||
             ((code & 0xff) == SQLITE_CONSTRAINT &&
              std::string_view(sqlite3_errmsg(db)).find("FOREIGN KEY") != std::string_view::npos)) {
    // ON DELETE RESTRICT reports itself with another extended code than an insert does.
    kind = ErrorKind::kFailedPrecondition;
  } else if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED ||
             (code & 0xff) == SQLITE_FULL) {
    kind = ErrorKind::kUnavailable;  // another's lock, a full disk: the same write later may do
  }
  return MakeError(kind, std::string("sqlite: ") + sqlite3_errmsg(db),
                   std::string(sql.substr(0, 120)));
}

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override {
    ForgetStatements();
    sqlite3_close_v2(db_);
  }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  SqlDialect Dialect() const override { return SqlDialect::kSqlite; }

  Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) override {
    std::vector<SqlRow> rows;
    auto done = Run(sql, params, &rows);
    if (!done) return done.error();
    return rows;
  }

  Result<int64_t> Execute(std::string_view sql, const SqlParams& params) override {
    auto done = Run(sql, params, nullptr);
    if (!done) return done.error();
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

  Result<void> ExecuteScript(std::string_view sql) override {
    std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return SqliteError(db_, sql);
    }
    return {};
  }

 private:
  // berthd runs the same few dozen statements: each is parsed once per connection (parsing
  // cost more than running most of them). Statements with values written into their text
  // would grow this without end: past kMaxStatements it starts again.
  static constexpr size_t kMaxStatements = 256;

  Result<sqlite3_stmt*> Prepared(std::string_view sql) {
    if (auto found = statements_.find(sql); found != statements_.end()) return found->second;
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db_, sql);
    }
    if (statements_.size() >= kMaxStatements) ForgetStatements();
    statements_.emplace(std::string(sql), raw);
    return raw;
  }

  void ForgetStatements() {
    for (auto& [sql, statement] : statements_) sqlite3_finalize(statement);
    statements_.clear();
  }

  Result<void> Run(std::string_view sql, const SqlParams& params, std::vector<SqlRow>* rows) {
    auto prepared = Prepared(sql);
    if (!prepared) return prepared.error();
    sqlite3_stmt* raw = *prepared;
    // Back to its start, its values unbound, whichever way this returns: a statement left
    // mid-step would hold its read transaction open.
    auto reset = [](sqlite3_stmt* statement) {
      sqlite3_reset(statement);
      sqlite3_clear_bindings(statement);
    };
    std::unique_ptr<sqlite3_stmt, decltype(reset)> stmt(raw, reset);
    int count = sqlite3_bind_parameter_count(raw);
    for (int i = 1; i <= count; ++i) {
      const char* name = sqlite3_bind_parameter_name(raw, i);  // "$3"
      size_t index = name && name[0] == '$' ? std::stoul(name + 1) : 0;
      if (index == 0 || index > params.size()) {
        return MakeError(ErrorKind::kInternal, "sqlite: parameter without a value",
                         std::string(sql.substr(0, 120)));
      }
      const SqlValue& v = params[index - 1];
      if (const auto* s = std::get_if<std::string>(&v)) {
        sqlite3_bind_text(raw, i, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else if (const auto* n = std::get_if<int64_t>(&v)) {
        sqlite3_bind_int64(raw, i, *n);
      } else {
        sqlite3_bind_null(raw, i);
      }
    }
    for (;;) {
      int rc = sqlite3_step(raw);
      if (rc == SQLITE_DONE) return {};
      if (rc != SQLITE_ROW) return SqliteError(db_, sql);
      if (rows == nullptr) continue;
      SqlRow row;
      int columns = sqlite3_column_count(raw);
      for (int c = 0; c < columns; ++c) {
        switch (sqlite3_column_type(raw, c)) {
          case SQLITE_NULL:
            row.values.emplace_back(nullptr);
            break;
          case SQLITE_INTEGER:
            row.values.emplace_back(static_cast<int64_t>(sqlite3_column_int64(raw, c)));
            break;
          default:
            row.values.emplace_back(
                std::string(reinterpret_cast<const char*>(sqlite3_column_text(raw, c)),
                            static_cast<size_t>(sqlite3_column_bytes(raw, c))));
        }
      }
      rows->push_back(std::move(row));
    }
  }

  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenSqlite(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return MakeError(ErrorKind::kUnavailable, "sqlite: cannot open: " + message, path);
  }
  auto connection = std::make_unique<SqliteConnection>(db);
  sqlite3_busy_timeout(db, 5000);
  // synchronous=FULL: a commit is on disk before it is acknowledged, so a state version tofu
  // was told is saved survives a power loss (NORMAL in WAL mode survives a crash of berthd but
  // may lose the last commits to one). It costs one fsync of the WAL per commit
  // (bench/sqlite_durability.cpp).
  auto configured = connection->ExecuteScript(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
  if (!configured) return configured.error();
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace berth::store
