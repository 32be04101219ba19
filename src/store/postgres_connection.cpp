// SqlConnection on libpq: parameters as text, integer columns read back as integers.
#include <libpq-fe.h>
#include <poll.h>

#include <cstring>
#include <string>

#include "store/sql.h"

namespace berth::store {
namespace {

constexpr Oid kInt8 = 20, kInt2 = 21, kInt4 = 23;

Error PostgresError(PGconn* conn, const PGresult* result, std::string_view sql) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state ? state : "";
  ErrorKind kind = ErrorKind::kInternal;
  if (code == "23505") {
    kind = ErrorKind::kAlreadyExists;
  } else if (code == "23503") {
    kind = ErrorKind::kFailedPrecondition;
  } else if (code == "40001" || code == "40P01") {
    kind = ErrorKind::kConflict;
  } else if (PQstatus(conn) != CONNECTION_OK || code.starts_with("08")) {
    kind = ErrorKind::kUnavailable;
  }
  std::string message = result ? PQresultErrorMessage(result) : PQerrorMessage(conn);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return MakeError(kind, "postgres: " + message, std::string(sql.substr(0, 120)));
}

class PostgresConnection final : public SqlConnection {
 public:
  explicit PostgresConnection(PGconn* conn) : conn_(conn) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  SqlDialect Dialect() const override { return SqlDialect::kPostgres; }

  Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) override {
    auto result = Run(sql, params);
    if (!result) return result.error();
    PGresult* r = result->get();
    std::vector<SqlRow> rows;
    int n = PQntuples(r), columns = PQnfields(r);
    rows.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      SqlRow row;
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(r, i, c)) {
          row.values.emplace_back(nullptr);
          continue;
        }
        Oid type = PQftype(r, c);
        const char* text = PQgetvalue(r, i, c);
        if (type == kInt8 || type == kInt4 || type == kInt2) {
          row.values.emplace_back(static_cast<int64_t>(std::stoll(text)));
        } else {
          row.values.emplace_back(std::string(text, static_cast<size_t>(PQgetlength(r, i, c))));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  Result<int64_t> Execute(std::string_view sql, const SqlParams& params) override {
    auto result = Run(sql, params);
    if (!result) return result.error();
    const char* affected = PQcmdTuples(result->get());
    return static_cast<int64_t>(affected && *affected ? std::stoll(affected) : 0);
  }

  Result<void> ExecuteScript(std::string_view sql) override {
    bool ends = sql == "COMMIT" || sql == "ROLLBACK";
    if (auto usable = EnsureConnected(ends); !usable) return usable;
    if (ends) in_transaction_ = false;
    std::string text(sql);
    Owned r(PQexec(conn_, text.c_str()), PQclear);
    if (!Succeeded(r.get()) && StartsAgain(sql)) r.reset(PQexec(conn_, text.c_str()));
    if (!Succeeded(r.get())) return PostgresError(conn_, r.get(), sql);
    if (sql.starts_with("BEGIN")) in_transaction_ = true;
    return {};
  }

  // What every session needs: a commit is answered once it is flushed, whatever the server's
  // default says (a state version tofu was told is saved must survive the server's crash).
  Result<void> ApplySessionSettings() { return ExecuteScript("SET synchronous_commit = on"); }

 private:
  using Owned = std::unique_ptr<PGresult, void (*)(PGresult*)>;

  // A connection the server dropped (a restart, a failover, an administrator's
  // pg_terminate_backend) is made again before the next unit of work, never in the middle of a
  // transaction: that transaction is gone, so its remaining statements fail until the caller
  // ends it.
  Result<void> EnsureConnected(bool ends_transaction) {
    if (PQstatus(conn_) == CONNECTION_OK && (in_transaction_ || !SpokeWhileIdle())) return {};
    if (in_transaction_) {
      if (ends_transaction) in_transaction_ = false;
      return MakeError(ErrorKind::kUnavailable,
                       "postgres: the connection was lost mid-transaction");
    }
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) return PostgresError(conn_, nullptr, "reconnect");
    return ApplySessionSettings();
  }

  // An idle pooled connection the server dropped still says CONNECTION_OK until it is read
  // from: the server's goodbye (and its end of the stream) waits on the socket. An idle
  // connection has nothing else to hear from the server, so one whose socket is readable is
  // made again before a unit of work starts on it.
  bool SpokeWhileIdle() const {
    pollfd socket{.fd = PQsocket(conn_), .events = POLLIN, .revents = 0};
    return poll(&socket, 1, 0) > 0;
  }

  static bool Succeeded(const PGresult* r) {
    auto status = PQresultStatus(r);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }

  // A connection dropped so recently that its goodbye had not arrived when the unit of work
  // began is found gone by its first statement. One that changes nothing by itself (BEGIN, or a
  // SELECT outside a transaction) is then sent once more on a new connection; any other
  // statement may have run before the connection went, and fails.
  bool StartsAgain(std::string_view sql) {
    if (in_transaction_ || PQstatus(conn_) == CONNECTION_OK) return false;
    if (!sql.starts_with("BEGIN") && !sql.starts_with("SELECT")) return false;
    return EnsureConnected(false).has_value();
  }

  Result<Owned> Run(std::string_view sql, const SqlParams& params) {
    if (auto usable = EnsureConnected(false); !usable) return usable.error();
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (const auto* s = std::get_if<std::string>(&params[i])) {
        texts[i] = *s;
        values[i] = texts[i].c_str();
      } else if (const auto* n = std::get_if<int64_t>(&params[i])) {
        texts[i] = std::to_string(*n);
        values[i] = texts[i].c_str();
      }
    }
    std::string text(sql);
    auto exec = [&] {
      return PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
    };
    Owned r(exec(), PQclear);
    if (!Succeeded(r.get()) && StartsAgain(sql)) r.reset(exec());
    if (!Succeeded(r.get())) return PostgresError(conn_, r.get(), sql);
    return r;
  }

  PGconn* conn_;
  bool in_transaction_ = false;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenPostgres(const std::string& conninfo) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    // The connection string may hold a password: never echo it.
    return MakeError(ErrorKind::kUnavailable, "postgres: cannot connect: " + message);
  }
  auto connection = std::make_unique<PostgresConnection>(conn);
  // Quiet NOTICEs (CREATE ... IF NOT EXISTS) that libpq would print on stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  if (auto settled = connection->ApplySessionSettings(); !settled) return settled.error();
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace berth::store
