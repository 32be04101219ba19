// What synchronous=FULL (store/sqlite_connection.cpp: an acknowledged state version survives a
// power loss) costs against SQLite's NORMAL, measured in the same run: one commit of a
// state-sized row (64 KiB) in WAL mode, in a folder of $TMPDIR (point it at the disk a data
// folder would be on).
//
//   TMPDIR=/var/tmp build/release/bench/sqlite_durability --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <string>

#include "store/sql.h"
#include "sys/files.h"

namespace {

void Commit(benchmark::State& state, const char* synchronous) {
  auto dir = berth::sys::TempDir::Create("sqlite-bench");
  if (!dir) {
    state.SkipWithError("cannot make a folder");
    return;
  }
  auto db = berth::store::OpenSqlite((dir->Path() / "bench.db").string());
  if (!db) {
    state.SkipWithError("cannot open a database");
    return;
  }
  auto& c = **db;
  (void)c.ExecuteScript(std::string("PRAGMA synchronous=") + synchronous + ";" +
                        "CREATE TABLE versions (id INTEGER PRIMARY KEY, content BLOB)");
  const std::string content(64 << 10, 's');
  for (auto _ : state) {
    if (!c.Execute("INSERT INTO versions (content) VALUES ($1)", {content}))
      state.SkipWithError("insert failed");
  }
}

BENCHMARK_CAPTURE(Commit, full, "FULL")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Commit, normal, "NORMAL")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
