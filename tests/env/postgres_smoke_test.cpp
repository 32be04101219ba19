// The test PostgreSQL is real: it accepts connections and queries, and keeps what it is given.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>

#include "postgres_test_server.h"

namespace berth::testenv {
namespace {

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using QueryResult = std::unique_ptr<PGresult, decltype(&PQclear)>;

class PostgresSmoke : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = PostgresTestServer::Shared();
    ASSERT_TRUE(server) << server.error().ToString();
    conn_.reset(PQconnectdb((*server)->ConnectionString().c_str()));
    ASSERT_EQ(PQstatus(conn_.get()), CONNECTION_OK) << PQerrorMessage(conn_.get());
  }
  QueryResult Exec(const char* sql) { return QueryResult(PQexec(conn_.get(), sql), PQclear); }
  Connection conn_{nullptr, PQfinish};
};

TEST_F(PostgresSmoke, AnswersAQuery) {
  auto r = Exec("SELECT 40 + 2");
  ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn_.get());
  EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "42");
}

TEST_F(PostgresSmoke, KeepsWhatItIsGiven) {
  ASSERT_EQ(PQresultStatus(Exec("CREATE TABLE IF NOT EXISTS smoke (v text)").get()),
            PGRES_COMMAND_OK);
  ASSERT_EQ(PQresultStatus(Exec("INSERT INTO smoke VALUES ('kept')").get()), PGRES_COMMAND_OK);
  auto r = Exec("SELECT v FROM smoke");
  ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK);
  ASSERT_GE(PQntuples(r.get()), 1);
  EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "kept");
}

}  // namespace
}  // namespace berth::testenv
