// Migrations, oldest first.
#include "store/migrations.h"

#include <chrono>
#include <string_view>

#include "core/time_format.h"

namespace berth::store {
namespace {

struct Migration {
  int64_t version;
  std::string_view sql;
};

// A configuration table: the common columns, then the kind's own, then its constraints.
#define BERTH_RECORD_COLUMNS                                                     \
  "org_id TEXT NOT NULL REFERENCES organizations(id), parent_id TEXT NOT NULL, " \
  "id TEXT NOT NULL, body TEXT NOT NULL, version BIGINT NOT NULL, "              \
  "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, "

constexpr Migration kMigrations[] = {
    {1,
     "CREATE TABLE organizations (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL);"
     "CREATE TABLE api_tokens (org_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE "
     "CASCADE, id TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, description TEXT NOT NULL, "
     "created_at BIGINT NOT NULL, PRIMARY KEY (org_id, id));"
     "CREATE TABLE projects (" BERTH_RECORD_COLUMNS
     "PRIMARY KEY (org_id, parent_id, id), UNIQUE (org_id, id));"
     "CREATE TABLE env_types (" BERTH_RECORD_COLUMNS
     "PRIMARY KEY (org_id, parent_id, id), UNIQUE (org_id, id));"
     "CREATE TABLE runners (" BERTH_RECORD_COLUMNS
     "runner_type TEXT NOT NULL, storage_type TEXT NOT NULL, "
     "PRIMARY KEY (org_id, parent_id, id), UNIQUE (org_id, id));"
     "CREATE TABLE environments (" BERTH_RECORD_COLUMNS
     "env_type_id TEXT NOT NULL, runner_id TEXT, PRIMARY KEY (org_id, parent_id, id), "
     "FOREIGN KEY (org_id, parent_id) REFERENCES projects (org_id, id) ON DELETE RESTRICT, "
     "FOREIGN KEY (org_id, env_type_id) REFERENCES env_types (org_id, id) ON DELETE RESTRICT, "
     "FOREIGN KEY (org_id, runner_id) REFERENCES runners (org_id, id) ON DELETE RESTRICT);"
     "CREATE INDEX environments_by_runner ON environments (org_id, runner_id);"
     // A selector is (project, environment type), '' meaning any: the database refuses two
     // rules with one selector, so two concurrent creates cannot both win.
     "CREATE TABLE runner_rules (" BERTH_RECORD_COLUMNS
     "runner_id TEXT NOT NULL, project_id TEXT NOT NULL, env_type_id TEXT NOT NULL, "
     "PRIMARY KEY (org_id, parent_id, id), UNIQUE (org_id, project_id, env_type_id), "
     "FOREIGN KEY (org_id, runner_id) REFERENCES runners (org_id, id) ON DELETE CASCADE);"
     "CREATE INDEX runner_rules_by_runner ON runner_rules (org_id, runner_id);"},
    // berthd's state backend: every version of every state (a NULL content is a deletion),
    // and at most one lock per state.
    {2,
     "CREATE TABLE state_versions (state_key TEXT NOT NULL, version BIGINT NOT NULL, "
     "content TEXT, sha256 TEXT NOT NULL, size BIGINT NOT NULL, run_id TEXT NOT NULL, "
     "created_at BIGINT NOT NULL, PRIMARY KEY (state_key, version));"
     "CREATE TABLE state_locks (state_key TEXT PRIMARY KEY, lock_id TEXT NOT NULL, "
     "info TEXT NOT NULL, created_at BIGINT NOT NULL);"},
    // Deployments: ordered per environment; the partial unique index lets one at a time hold
    // its environment, whichever berthd tries.
    {3,
     "CREATE TABLE deployments (org_id TEXT NOT NULL, project_id TEXT NOT NULL, "
     "env_id TEXT NOT NULL, id TEXT NOT NULL, sequence BIGINT NOT NULL, state TEXT NOT NULL, "
     "spec TEXT NOT NULL, transitions TEXT NOT NULL, result TEXT, run_id TEXT NOT NULL, "
     "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (org_id, id), "
     "UNIQUE (org_id, project_id, env_id, sequence), "
     "FOREIGN KEY (org_id, project_id, env_id) REFERENCES environments (org_id, parent_id, id) "
     "ON DELETE RESTRICT);"
     "CREATE UNIQUE INDEX deployments_one_holder ON deployments (org_id, project_id, env_id) "
     "WHERE state IN ('dispatched', 'running', 'waiting_approval');"
     "CREATE INDEX deployments_by_state ON deployments (state, created_at);"},
    // What deployments' runs upload and read: module bundles (named by content), log chunks
    // (a run's seq is stored once; position orders a deployment's log across its runs) and
    // artifacts. Deployments are found by their current run.
    {4,
     "CREATE TABLE bundles (org_id TEXT NOT NULL, id TEXT NOT NULL, sha256 TEXT NOT NULL, "
     "size BIGINT NOT NULL, content TEXT NOT NULL, created_at BIGINT NOT NULL, "
     "PRIMARY KEY (org_id, id));"
     "CREATE TABLE deployment_logs (org_id TEXT NOT NULL, deployment_id TEXT NOT NULL, "
     "position BIGINT NOT NULL, run_id TEXT NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL, "
     "at BIGINT NOT NULL, PRIMARY KEY (org_id, deployment_id, position), UNIQUE (run_id, seq), "
     "FOREIGN KEY (org_id, deployment_id) REFERENCES deployments (org_id, id) "
     "ON DELETE CASCADE);"
     "CREATE TABLE deployment_artifacts (org_id TEXT NOT NULL, deployment_id TEXT NOT NULL, "
     "name TEXT NOT NULL, run_id TEXT NOT NULL, sha256 TEXT NOT NULL, size BIGINT NOT NULL, "
     "content TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (org_id, deployment_id, name), "
     "FOREIGN KEY (org_id, deployment_id) REFERENCES deployments (org_id, id) "
     "ON DELETE CASCADE);"
     "CREATE INDEX deployments_by_run ON deployments (run_id);"},
    // Keys every berthd on the database shares (the run tokens' signing seed): a token one
    // berthd minted is good at every other.
    {5,
     "CREATE TABLE shared_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL, "
     "created_at BIGINT NOT NULL);"},
    // What launchers had to say about a deployment's runs (an ignored override, a full quota):
    // a repeat of the last event counts up instead of adding a row.
    {6,
     "CREATE TABLE deployment_events (org_id TEXT NOT NULL, deployment_id TEXT NOT NULL, "
     "position BIGINT NOT NULL, run_id TEXT NOT NULL, type TEXT NOT NULL, reason TEXT NOT NULL, "
     "message TEXT NOT NULL, count BIGINT NOT NULL, first_at BIGINT NOT NULL, "
     "last_at BIGINT NOT NULL, PRIMARY KEY (org_id, deployment_id, position), "
     "FOREIGN KEY (org_id, deployment_id) REFERENCES deployments (org_id, id) "
     "ON DELETE CASCADE);"},
    // Which run holds each state lock: berthd releases what a run still holds when it ends.
    {7,
     "ALTER TABLE state_locks ADD COLUMN run_id TEXT NOT NULL DEFAULT '';"
     "CREATE INDEX state_locks_by_run ON state_locks (run_id);"},
    // What was done to a state by hand (a lock broken, a rollback), by whom and why.
    {8,
     "CREATE TABLE state_history (state_key TEXT NOT NULL, position BIGINT NOT NULL, "
     "action TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL, at BIGINT NOT NULL, "
     "PRIMARY KEY (state_key, position));"},
    // API tokens beyond the first: what each may do, until when, and who made it. Tokens from
    // before are the admin tokens they were.
    {9,
     "ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'admin';"
     "ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;"
     "ALTER TABLE api_tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';"},
    // Several berthd on one database: each replica's lease (its heartbeat), the replica that
    // owns each deployment's run, and a cancel asked of a replica that does not own the run.
    // Runs from before belong to no replica: the first berthd to start takes them up.
    {10,
     "CREATE TABLE replicas (id TEXT PRIMARY KEY, host TEXT NOT NULL, "
     "started_at BIGINT NOT NULL, lease_until BIGINT NOT NULL);"
     "ALTER TABLE deployments ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE deployments ADD COLUMN cancel_requested_by TEXT NOT NULL DEFAULT '';"},
    // Retention (server/retention.h) and kept states (server/dispatch/kept_states.h): artifacts
    // found by name across deployments, the bundle each deployment runs (NULL: recorded before
    // this version), ended deployments by age.
    {11,
     "CREATE INDEX deployment_artifacts_by_name ON deployment_artifacts (name, at);"
     "ALTER TABLE deployments ADD COLUMN bundle_id TEXT;"
     "CREATE INDEX deployments_by_bundle ON deployments (org_id, bundle_id);"
     "CREATE INDEX deployments_by_age ON deployments (state, updated_at);"},
    // kubernetes-agent runners (store/agent_store.h): each runner's command queue, the ends
    // agents report, the agents seen polling, and the agent token ids already used.
    {12,
     "CREATE TABLE runner_commands (org_id TEXT NOT NULL, runner_id TEXT NOT NULL, "
     "seq BIGINT NOT NULL, kind TEXT NOT NULL, run_id TEXT NOT NULL, payload TEXT NOT NULL, "
     "state TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, "
     "lease_until BIGINT NOT NULL, receipt TEXT NOT NULL, deliveries BIGINT NOT NULL, "
     "agent TEXT NOT NULL, reason TEXT NOT NULL, PRIMARY KEY (org_id, runner_id, seq), "
     "UNIQUE (org_id, runner_id, kind, run_id));"
     "CREATE INDEX runner_commands_by_state ON runner_commands (state, expires_at);"
     "CREATE TABLE agent_run_ends (run_id TEXT PRIMARY KEY, org_id TEXT NOT NULL, "
     "runner_id TEXT NOT NULL, outcome TEXT NOT NULL, at BIGINT NOT NULL);"
     "CREATE TABLE runner_agents (org_id TEXT NOT NULL, runner_id TEXT NOT NULL, "
     "agent TEXT NOT NULL, version TEXT NOT NULL, last_poll_at BIGINT NOT NULL, "
     "PRIMARY KEY (org_id, runner_id, agent));"
     "CREATE TABLE agent_token_ids (id TEXT PRIMARY KEY, expires_at BIGINT NOT NULL);"
     "CREATE INDEX agent_token_ids_by_expiry ON agent_token_ids (expires_at);"},
};

#undef BERTH_RECORD_COLUMNS

}  // namespace

int64_t LatestSchemaVersion() { return std::end(kMigrations)[-1].version; }

Result<void> Migrate(SqlConnection& connection) {
  bool postgres = connection.Dialect() == SqlDialect::kPostgres;
  if (postgres) {
    // Held for the session: another berthd starting at the same time waits here.
    if (auto locked = connection.Query("SELECT pg_advisory_lock(7212480)"); !locked) {
      return locked.error();
    }
  }
  auto unlock = [&] {
    if (postgres)
      IgnoreError(connection.Query("SELECT pg_advisory_unlock(7212480)"),
                  "the session's end releases it anyway");
  };
  auto created = connection.ExecuteScript(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
      "applied_at BIGINT NOT NULL)");
  if (!created) {
    unlock();
    return created.error();
  }
  for (const auto& m : kMigrations) {
    auto tx = Transaction::Begin(connection);
    if (!tx) {
      unlock();
      return tx.error();
    }
    auto applied =
        connection.Query("SELECT version FROM schema_migrations WHERE version = $1", {m.version});
    if (!applied) {
      unlock();
      return applied.error();
    }
    if (!applied->empty()) continue;  // the transaction rolls back: nothing was written
    Result<void> run = connection.ExecuteScript(m.sql);
    if (run) {
      auto recorded =
          connection.Execute("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                             {m.version, UnixMillisNow()});
      if (!recorded) run = recorded.error();
    }
    if (!run) {
      unlock();
      return MakeError(ErrorKind::kInternal, "migration " + std::to_string(m.version) +
                                                 " failed: " + run.error().message);
    }
    if (auto committed = tx->Commit(); !committed) {
      unlock();
      return committed.error();
    }
  }
  // A database migrated by a newer berth must not be written by this one.
  auto newest = connection.Query("SELECT MAX(version) FROM schema_migrations");
  unlock();
  if (!newest) return newest.error();
  if (!newest->empty() && newest->front().Int(0) > LatestSchemaVersion()) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "the database schema is version " + std::to_string(newest->front().Int(0)) +
                         ", newer than this berth knows (" + std::to_string(LatestSchemaVersion()) +
                         "): upgrade berth");
  }
  return {};
}

}  // namespace berth::store
