// A thin SQL layer under the store: one connection interface with SQLite and PostgreSQL behind
// it. Statements are written once, in the SQL both understand, with $1..$N parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.h"

namespace berth::store {

using SqlValue = std::variant<std::nullptr_t, int64_t, std::string>;
using SqlParams = std::vector<SqlValue>;

struct SqlRow {
  std::vector<SqlValue> values;

  bool IsNull(size_t i) const { return std::holds_alternative<std::nullptr_t>(values.at(i)); }
  // Text of a column (empty for NULL); integers are formatted.
  std::string Text(size_t i) const;
  int64_t Int(size_t i) const;  // 0 for NULL
};

enum class SqlDialect { kSqlite, kPostgres };

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  virtual SqlDialect Dialect() const = 0;
  // Runs one statement. Errors map to kinds: a unique violation is kAlreadyExists, a foreign
  // key violation kFailedPrecondition, a busy or lost database kUnavailable.
  virtual Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params = {}) = 0;
  // Rows changed.
  virtual Result<int64_t> Execute(std::string_view sql, const SqlParams& params = {}) = 0;
  // Several statements without parameters (migrations).
  virtual Result<void> ExecuteScript(std::string_view sql) = 0;
};

// sqlite: a path (created if missing) in WAL mode with foreign keys on and a busy timeout.
Result<std::unique_ptr<SqlConnection>> OpenSqlite(const std::string& path);
// postgres: a libpq connection string or postgres:// URL.
Result<std::unique_ptr<SqlConnection>> OpenPostgres(const std::string& conninfo);

// A transaction on one connection, rolled back unless committed. SQLite takes the write lock
// at BEGIN (IMMEDIATE) so that two writers never deadlock on an upgrade.
class Transaction {
 public:
  static Result<Transaction> Begin(SqlConnection& connection);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  Result<void> Commit();

 private:
  explicit Transaction(SqlConnection* connection) : connection_(connection) {}
  SqlConnection* connection_;
  bool done_ = false;
};

}  // namespace berth::store
