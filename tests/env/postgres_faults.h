// Faults injected into a real PostgreSQL database under a real berthd: a trigger on a table
// makes its writes (insert, update, delete), from the Nth on, fail with an SQLSTATE or stall
// for a while, until the test heals it. Writes are counted with a sequence, which a failed
// transaction does not roll back, so "the Nth write" means the Nth attempt.
#pragma once

#include <string>

#include "core/error.h"
#include "postgres_test_server.h"

namespace berth::testenv {

class PostgresFaults {
 public:
  // Installs the fault machinery (a table, a function) into database; no fault is on yet.
  static Result<PostgresFaults> Install(const PostgresTestServer& server, std::string database);

  struct Fault {
    int skip = 0;          // writes let through before the first fault
    int count = -1;        // faulty writes after those; -1: until Heal
    std::string sqlstate;  // "" or an SQLSTATE the write fails with ("23505", "57P01", ...)
    int stall_ms = 0;      // how long each faulty write waits first
  };
  // Puts the fault on table's writes (replacing one it had), counting from now.
  Result<void> On(const std::string& table, const Fault& fault) const;
  // The table's writes are let through again.
  Result<void> Heal(const std::string& table) const;
  // How many of table's writes the fault has hit so far.
  Result<int> Hits(const std::string& table) const;

 private:
  PostgresFaults(const PostgresTestServer& server, std::string database)
      : server_(&server), database_(std::move(database)) {}

  const PostgresTestServer* server_;
  std::string database_;
};

}  // namespace berth::testenv
