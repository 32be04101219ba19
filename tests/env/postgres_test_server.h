// A real PostgreSQL server (Debian's binaries) on a temporary folder and a loopback port,
// started once per test binary and removed at its exit.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {

class PostgresTestServer {
 public:
  static Result<PostgresTestServer*> Shared();

  // A libpq connection string for the superuser on database `postgres`.
  std::string ConnectionString(const std::string& database = "postgres") const;
  // postgres://postgres@127.0.0.1:PORT/DATABASE
  std::string Url(const std::string& database = "postgres") const;
  int Port() const { return port_; }
  // Runs SQL (one or more statements) on database as the superuser.
  Result<void> Execute(const std::string& database, const std::string& sql) const;
  // A new empty database named prefix and a number no other in this process has.
  Result<std::string> CreateDatabase(const std::string& prefix) const;

  ~PostgresTestServer();
  PostgresTestServer(const PostgresTestServer&) = delete;
  PostgresTestServer& operator=(const PostgresTestServer&) = delete;

 private:
  explicit PostgresTestServer(sys::TempDir dir) : dir_(std::move(dir)) {}
  static Result<std::unique_ptr<PostgresTestServer>> Start();

  sys::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<sys::Subprocess> server_;
};

}  // namespace berth::testenv
