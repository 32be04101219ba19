// initdb then postgres, as an unprivileged user when we are root (PostgreSQL refuses root).
#include "postgres_test_server.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "loopback.h"

namespace berth::testenv {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(60);

std::filesystem::path PostgresBinDir() {
  if (const char* dir = std::getenv("BERTH_TEST_PG_BIN"); dir && *dir) return dir;
  return "/usr/lib/postgresql/15/bin";
}

struct Identity {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
};

// Root runs the server as `nobody`; anyone else as themselves.
Result<Identity> ServerIdentity() {
  if (geteuid() != 0) return Identity{};
  passwd* pw = getpwnam("nobody");
  if (pw == nullptr) {
    return MakeError(ErrorKind::kFailedPrecondition, "no user `nobody` to run PostgreSQL as");
  }
  return Identity{pw->pw_uid, pw->pw_gid};
}

}  // namespace

Result<PostgresTestServer*> PostgresTestServer::Shared() {
  static Result<std::unique_ptr<PostgresTestServer>> server = Start();
  if (!server) return server.error();
  return server->get();
}

Result<std::unique_ptr<PostgresTestServer>> PostgresTestServer::Start() {
  auto bin = PostgresBinDir();
  if (!std::filesystem::exists(bin / "postgres")) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "PostgreSQL server binaries not found: run scripts/bootstrap", bin.string());
  }
  auto identity = ServerIdentity();
  if (!identity) return identity.error();
  auto dir = sys::TempDir::Create("berth-postgres");
  if (!dir) return dir.error();
  std::unique_ptr<PostgresTestServer> server(new PostgresTestServer(std::move(*dir)));
  const auto& root = server->dir_.Path();
  auto data = root / "data";
  std::filesystem::create_directory(data);
  if (identity->uid) {
    // The server's user must reach its folders; nothing else in them is secret.
    std::filesystem::permissions(root, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_exec |
                                           std::filesystem::perms::others_exec);
    if (chown(data.c_str(), *identity->uid, *identity->gid) != 0 ||
        chown(root.c_str(), 0, 0) != 0) {
      return MakeError(ErrorKind::kInternal, "cannot hand the data folder to nobody", data);
    }
  }
  std::string log = (root / "postgres.log").string();

  sys::SpawnOptions initdb;
  initdb.argv = {(bin / "initdb").string(),
                 "-D",
                 data.string(),
                 "-U",
                 "postgres",
                 "--auth=trust",
                 "--no-sync",
                 "-E",
                 "UTF8",
                 "--locale=C"};
  initdb.run_as_uid = identity->uid;
  initdb.run_as_gid = identity->gid;
  auto init = sys::RunToCompletion(initdb);
  if (!init) return init.error();
  if (init->exit_code != 0) {
    return MakeError(ErrorKind::kInternal, "initdb failed:\n" + init->output);
  }

  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  server->port_ = *port;
  sys::SpawnOptions options;
  options.argv = {(bin / "postgres").string(),  "-D", data.string(),        "-p",
                  std::to_string(*port),        "-k", data.string(),        "-c",
                  "listen_addresses=127.0.0.1", "-c", "fsync=off",          "-c",
                  "full_page_writes=off",       "-c", "max_connections=200"};
  options.output_path = log;
  options.run_as_uid = identity->uid;
  options.run_as_gid = identity->gid;
  auto process = sys::Subprocess::Spawn(options);
  if (!process) return process.error();
  server->server_ = std::make_unique<sys::Subprocess>(std::move(*process));
  std::string conninfo = server->ConnectionString() + " connect_timeout=2";
  auto ready = WaitUntilReady(
      "postgres", *server->server_, [&] { return PQping(conninfo.c_str()) == PQPING_OK; },
      kStartTimeout, log);
  if (!ready) return ready.error();
  return server;
}

PostgresTestServer::~PostgresTestServer() {
  if (server_) {
    server_->Signal(SIGINT);  // fast shutdown: no waiting for clients
    server_->Wait();
  }
}

Result<void> PostgresTestServer::Execute(const std::string& database,
                                         const std::string& sql) const {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(ConnectionString(database).c_str()),
                                                    PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    return MakeError(ErrorKind::kUnavailable, PQerrorMessage(conn.get()));
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), PQclear);
  auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return MakeError(ErrorKind::kInternal, PQerrorMessage(conn.get()));
  return {};
}

Result<std::string> PostgresTestServer::CreateDatabase(const std::string& prefix) const {
  static std::atomic<int> counter{0};
  std::string name = fmt::format("{}_{}_{}", prefix, getpid(), counter++);
  if (auto created = Execute("postgres", "CREATE DATABASE " + name); !created)
    return created.error();
  return name;
}

std::string PostgresTestServer::ConnectionString(const std::string& database) const {
  return fmt::format("host=127.0.0.1 port={} user=postgres dbname={}", port_, database);
}

std::string PostgresTestServer::Url(const std::string& database) const {
  return fmt::format("postgres://postgres@127.0.0.1:{}/{}", port_, database);
}

}  // namespace berth::testenv
