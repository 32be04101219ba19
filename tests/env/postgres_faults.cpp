#include "postgres_faults.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <memory>

namespace berth::testenv {
namespace {

// One row per faulty table; the sequence berth_test_fault_<table> counts its writes.
constexpr char kMachinery[] = R"SQL(
CREATE TABLE berth_test_faults (tbl TEXT PRIMARY KEY, skip INT NOT NULL, count INT NOT NULL,
                                sqlstate TEXT NOT NULL, stall_ms INT NOT NULL);
CREATE FUNCTION berth_test_fault() RETURNS trigger AS $$
DECLARE
  f berth_test_faults%ROWTYPE;
  n BIGINT;
BEGIN
  SELECT * INTO f FROM berth_test_faults WHERE tbl = TG_TABLE_NAME;
  IF NOT FOUND THEN RETURN COALESCE(NEW, OLD); END IF;
  n := nextval(format('berth_test_fault_%s', TG_TABLE_NAME));
  IF n <= f.skip OR (f.count >= 0 AND n > f.skip + f.count) THEN RETURN COALESCE(NEW, OLD); END IF;
  PERFORM nextval(format('berth_test_fault_hits_%s', TG_TABLE_NAME));
  IF f.stall_ms > 0 THEN PERFORM pg_sleep(f.stall_ms / 1000.0); END IF;
  IF f.sqlstate <> '' THEN
    RAISE EXCEPTION 'fault injected by the test into %', TG_TABLE_NAME USING ERRCODE = f.sqlstate;
  END IF;
  RETURN COALESCE(NEW, OLD);
END $$ LANGUAGE plpgsql;
)SQL";

// Table names come from tests; still, only plain identifiers reach the SQL.
Result<void> CheckTableName(const std::string& table) {
  for (char c : table) {
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return MakeError(ErrorKind::kInvalidArgument, "table " + table + ": a plain identifier");
  }
  return {};
}

}  // namespace

Result<PostgresFaults> PostgresFaults::Install(const PostgresTestServer& server,
                                               std::string database) {
  if (auto installed = server.Execute(database, kMachinery); !installed) return installed.error();
  return PostgresFaults(server, std::move(database));
}

Result<void> PostgresFaults::On(const std::string& table, const Fault& fault) const {
  if (auto named = CheckTableName(table); !named) return named.error();
  if (!fault.sqlstate.empty() && fault.sqlstate.size() != 5)
    return MakeError(ErrorKind::kInvalidArgument, "sqlstate " + fault.sqlstate + ": 5 characters");
  return server_->Execute(
      database_,
      fmt::format("SET client_min_messages = warning;"
                  "DROP SEQUENCE IF EXISTS berth_test_fault_{0};"
                  "DROP SEQUENCE IF EXISTS berth_test_fault_hits_{0};"
                  "CREATE SEQUENCE berth_test_fault_{0}; CREATE SEQUENCE berth_test_fault_hits_{0};"
                  "DELETE FROM berth_test_faults WHERE tbl = '{0}';"
                  "INSERT INTO berth_test_faults VALUES ('{0}', {1}, {2}, '{3}', {4});"
                  "DROP TRIGGER IF EXISTS berth_test_fault ON {0};"
                  "CREATE TRIGGER berth_test_fault BEFORE INSERT OR UPDATE OR DELETE ON {0} "
                  "FOR EACH ROW EXECUTE FUNCTION berth_test_fault();",
                  table, fault.skip, fault.count, fault.sqlstate, fault.stall_ms));
}

Result<void> PostgresFaults::Heal(const std::string& table) const {
  if (auto named = CheckTableName(table); !named) return named.error();
  return server_->Execute(database_, fmt::format("SET client_min_messages = warning;"
                                                 "DROP TRIGGER IF EXISTS berth_test_fault ON {0};"
                                                 "DELETE FROM berth_test_faults WHERE tbl = '{0}';",
                                                 table));
}

Result<int> PostgresFaults::Hits(const std::string& table) const {
  if (auto named = CheckTableName(table); !named) return named.error();
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(
      PQconnectdb(server_->ConnectionString(database_).c_str()), PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    return MakeError(ErrorKind::kUnavailable, PQerrorMessage(conn.get()));
  // A sequence never advanced reads 1 with is_called false.
  std::string sql = fmt::format(
      "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM berth_test_fault_hits_{}", table);
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), PQclear);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1)
    return MakeError(ErrorKind::kInternal, PQerrorMessage(conn.get()));
  return std::stoi(PQgetvalue(result.get(), 0, 0));
}

}  // namespace berth::testenv
