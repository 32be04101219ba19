// Row accessors and transactions.
#include "store/sql.h"

#include <utility>

namespace berth::store {

std::string SqlRow::Text(size_t i) const {
  const auto& v = values.at(i);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  return {};
}

int64_t SqlRow::Int(size_t i) const {
  const auto& v = values.at(i);
  if (const auto* n = std::get_if<int64_t>(&v)) return *n;
  if (const auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return 0;
}

Result<Transaction> Transaction::Begin(SqlConnection& connection) {
  auto begun = connection.ExecuteScript(
      connection.Dialect() == SqlDialect::kSqlite ? "BEGIN IMMEDIATE" : "BEGIN");
  if (!begun) return begun.error();
  return Transaction(&connection);
}

Transaction::Transaction(Transaction&& other) noexcept
    : connection_(other.connection_), done_(std::exchange(other.done_, true)) {}

Transaction::~Transaction() {
  if (!done_)
    IgnoreError(connection_->ExecuteScript("ROLLBACK"),
                "a destructor has no one to tell; the next BEGIN on it fails loudly");
}

Result<void> Transaction::Commit() {
  done_ = true;
  return connection_->ExecuteScript("COMMIT");
}

}  // namespace berth::store
