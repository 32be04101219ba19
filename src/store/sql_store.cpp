// Store on SqlConnection: one implementation for both databases.
#include <chrono>
#include <optional>

#include "core/mutex.h"
#include "core/time_format.h"
#include "crypto/key_ring.h"
#include "store/migrations.h"
#include "store/pool.h"
#include "store/sealing.h"
#include "store/sql.h"
#include "store/sql_agent_store.h"
#include "store/sql_deployment_data_store.h"
#include "store/sql_deployment_store.h"
#include "store/sql_replica_store.h"
#include "store/sql_state_store.h"
#include "store/store.h"

namespace berth::store {
namespace {

using nlohmann::json;

struct Table {
  std::string_view name;
  std::vector<std::string> columns;  // the kind's own indexed columns
};

const Table& TableOf(Kind kind) {
  static const Table kProjects{"projects", {}};
  static const Table kEnvTypes{"env_types", {}};
  static const Table kEnvironments{"environments", {"env_type_id", "runner_id"}};
  static const Table kRunners{"runners", {"runner_type", "storage_type"}};
  static const Table kRules{"runner_rules", {"runner_id", "project_id", "env_type_id"}};
  switch (kind) {
    case Kind::kProject:
      return kProjects;
    case Kind::kEnvType:
      return kEnvTypes;
    case Kind::kEnvironment:
      return kEnvironments;
    case Kind::kRunner:
      return kRunners;
    case Kind::kRunnerRule:
      return kRules;
  }
  return kProjects;
}

SqlValue Value(const std::optional<std::string>& v) {
  if (!v) return nullptr;
  return *v;
}

constexpr std::string_view kTokenColumns =
    "SELECT org_id, id, description, created_at, scopes, expires_at, created_by FROM api_tokens";

Result<void> InsertToken(SqlConnection& c, const ApiToken& token, const std::string& secret_hash) {
  std::string scopes;
  for (const std::string& name : token.scopes.Names()) scopes += (scopes.empty() ? "" : ",") + name;
  auto n = c.Execute(
      "INSERT INTO api_tokens (org_id, id, secret_hash, description, created_at, scopes, "
      "expires_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      {token.org_id, token.id, secret_hash, token.description,
       token.created_at != 0 ? token.created_at : UnixMillisNow(), scopes, token.expires_at,
       token.created_by});
  if (!n) return n.error();
  return {};
}

Result<ApiToken> TokenFrom(const SqlRow& r) {
  std::vector<std::string> names;
  std::string stored = r.Text(4);
  for (size_t start = 0; start <= stored.size();) {
    size_t comma = std::min(stored.find(',', start), stored.size());
    names.push_back(stored.substr(start, comma - start));
    start = comma + 1;
  }
  auto scopes = Scopes::Parse(names, "scopes");
  if (!scopes)
    return MakeError(ErrorKind::kInternal, "token " + r.Text(1) + " has unknown scopes " + stored);
  return ApiToken{.id = r.Text(1),
                  .org_id = r.Text(0),
                  .description = r.Text(2),
                  .created_at = r.Int(3),
                  .scopes = *scopes,
                  .expires_at = r.Int(5),
                  .created_by = r.Text(6)};
}

class SqlStore final : public Store {
 public:
  SqlStore(std::unique_ptr<Pool> pool, std::shared_ptr<crypto::KeyRing> keys)
      : pool_(std::move(pool)),
        keys_(std::move(keys)),
        states_(MakeSqlStateStore(*pool_, keys_.get())),
        deployments_(MakeSqlDeploymentStore(*pool_, keys_.get())),
        deployment_data_(MakeSqlDeploymentDataStore(*pool_, keys_.get())),
        replicas_(MakeSqlReplicaStore(*pool_)),
        agents_(MakeSqlAgentStore(*pool_)) {}

  StateStore& States() override { return *states_; }
  DeploymentStore& Deployments() override { return *deployments_; }
  DeploymentDataStore& DeploymentData() override { return *deployment_data_; }
  ReplicaStore& Replicas() override { return *replicas_; }
  AgentStore& Agents() override { return *agents_; }

  Result<bool> CreateOrganization(const std::string& id) override {
    auto c = pool_->Borrow();
    auto n = c->Execute(
        "INSERT INTO organizations (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        {id, UnixMillisNow()});
    if (!n) return n.error();
    return *n == 1;
  }

  Result<std::string> EnsureSharedSecret(const std::string& name,
                                         const std::string& candidate) override {
    auto c = pool_->Borrow();
    auto n = c->Execute(
        "INSERT INTO shared_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT "
        "(name) DO NOTHING",
        {name, SealValue(keys_.get(), candidate, SharedSecretCell(name)), UnixMillisNow()});
    if (!n) return n.error();
    auto rows = c->Query("SELECT value FROM shared_secrets WHERE name = $1", {name});
    if (!rows) return rows.error();
    if (rows->empty())
      return MakeError(ErrorKind::kInternal, "shared secret " + name + " vanished");
    return OpenValue(keys_.get(), rows->front().Text(0), SharedSecretCell(name));
  }

  Result<ResealReport> Reseal(const crypto::KeyRing& keys, bool seal_plaintext) override {
    auto c = pool_->Borrow();
    ResealReport report;
    std::string current = keys.CurrentKeyId();
    for (const SealedColumn& column : SealedColumns()) {
      std::string key_list;
      for (const auto& k : column.key_columns)
        key_list += (key_list.empty() ? "" : ", ") + std::string(k.name);
      // The rows' keys first, then one value at a time: a state can be large.
      auto rows = c->Query("SELECT " + key_list + " FROM " + std::string(column.table) + " WHERE " +
                           std::string(column.column) + " IS NOT NULL");
      if (!rows) return rows.error();
      // "a = $1 AND b = $2", numbered from first
      auto match = [&](size_t first) {
        std::string where;
        for (size_t i = 0; i < column.key_columns.size(); ++i)
          where += (i ? " AND " : "") + std::string(column.key_columns[i].name) + " = $" +
                   std::to_string(i + first);
        return where;
      };
      for (const auto& row : *rows) {
        std::vector<SqlValue> key;
        std::vector<std::string> parts;
        for (size_t i = 0; i < column.key_columns.size(); ++i) {
          if (column.key_columns[i].integer) {
            key.emplace_back(row.Int(i));
            parts.push_back(std::to_string(row.Int(i)));
          } else {
            key.emplace_back(row.Text(i));
            parts.push_back(row.Text(i));
          }
        }
        const crypto::SealBinding where{column.context,
                                        crypto::RowOf({parts.begin(), parts.end()})};
        auto value = c->Query("SELECT " + std::string(column.column) + " FROM " +
                                  std::string(column.table) + " WHERE " + match(1),
                              key);
        if (!value) return value.error();
        if (value->empty() || value->front().IsNull(0)) continue;  // gone meanwhile
        std::string stored = value->front().Text(0);
        std::string id = crypto::KeyRing::KeyIdOf(stored);
        if (id == current && crypto::KeyRing::IsRowBound(stored)) {
          report.keys_in_use.insert(id);
          continue;
        }
        const bool in_clear = !crypto::KeyRing::IsSealed(stored);
        if (in_clear && !seal_plaintext) {
          ++report.left_in_clear;
          continue;
        }
        auto plain = in_clear ? Result<std::string>(stored) : keys.Open(stored, where);
        if (!plain) return plain.error();
        key.insert(key.begin(), keys.Seal(*plain, where));
        // Only if it did not change meanwhile: a newer value is sealed with a key berthd holds.
        key.emplace_back(stored);
        auto updated = c->Execute("UPDATE " + std::string(column.table) + " SET " +
                                      std::string(column.column) + " = $1 WHERE " + match(2) +
                                      " AND " + std::string(column.column) + " = $" +
                                      std::to_string(column.key_columns.size() + 2),
                                  key);
        if (!updated) return updated.error();
        if (*updated == 1) {
          ++report.resealed;
          report.keys_in_use.insert(current);
        } else {
          report.changed_meanwhile = true;
        }
      }
    }
    return report;
  }

  Result<bool> OrganizationExists(const std::string& id) override {
    auto c = pool_->Borrow();
    auto rows = c->Query("SELECT 1 FROM organizations WHERE id = $1", {id});
    if (!rows) return rows.error();
    return !rows->empty();
  }

  Result<bool> CreateOrganizationWithToken(const ApiToken& token,
                                           const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    auto tx = Transaction::Begin(*c);
    if (!tx) return tx.error();
    auto n = c->Execute(
        "INSERT INTO organizations (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        {token.org_id, UnixMillisNow()});
    if (!n) return n.error();
    if (*n == 0) return false;  // rolled back: nothing was written
    if (auto inserted = InsertToken(*c, token, secret_hash); !inserted) return inserted.error();
    if (auto committed = tx->Commit(); !committed) return committed.error();
    return true;
  }

  Result<void> CreateToken(const ApiToken& token, const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    return InsertToken(*c, token, secret_hash);
  }

  Result<void> PutToken(const ApiToken& token, const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    auto tx = Transaction::Begin(*c);
    if (!tx) return tx.error();
    auto removed = c->Execute("DELETE FROM api_tokens WHERE org_id = $1 AND id = $2",
                              {token.org_id, token.id});
    if (!removed) return removed.error();
    if (auto inserted = InsertToken(*c, token, secret_hash); !inserted) return inserted.error();
    return tx->Commit();
  }

  Result<ApiToken> FindToken(const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    auto rows = c->Query(std::string(kTokenColumns) + " WHERE secret_hash = $1", {secret_hash});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no such token");
    return TokenFrom(rows->front());
  }

  Result<std::vector<ApiToken>> ListTokens(const std::string& org) override {
    auto c = pool_->Borrow();
    auto rows = c->Query(std::string(kTokenColumns) + " WHERE org_id = $1 ORDER BY id", {org});
    if (!rows) return rows.error();
    std::vector<ApiToken> out;
    for (const auto& row : *rows) {
      auto token = TokenFrom(row);
      if (!token) return token.error();
      out.push_back(std::move(*token));
    }
    return out;
  }

  Result<void> DeleteToken(const std::string& org, const std::string& id) override {
    auto c = pool_->Borrow();
    auto n = c->Execute("DELETE FROM api_tokens WHERE org_id = $1 AND id = $2", {org, id});
    if (!n) return n.error();
    if (*n == 0) return MakeError(ErrorKind::kNotFound, "no token " + id);
    return {};
  }

  Result<Record> Create(Record record) override {
    const Table& t = TableOf(record.kind);
    std::string columns = "org_id, parent_id, id, body, version, created_at, updated_at";
    std::string values = "$1, $2, $3, $4, $5, $6, $7";
    record.version = 1;
    record.created_at = record.updated_at = UnixMillisNow();
    SqlParams params{record.org_id,  record.parent_id,  record.id,        record.body.dump(),
                     record.version, record.created_at, record.updated_at};
    for (const auto& column : t.columns) {
      columns += ", " + column;
      params.push_back(Value(ColumnValue(record, column)));
      values += ", $" + std::to_string(params.size());
    }
    auto c = pool_->Borrow();
    auto n = c->Execute(
        "INSERT INTO " + std::string(t.name) + " (" + columns + ") VALUES (" + values + ")",
        params);
    if (!n) return Explain(n.error(), record.kind, record.id);
    return record;
  }

  Result<Record> Get(Kind kind, const std::string& org, const std::string& parent,
                     const std::string& id) override {
    const Table& t = TableOf(kind);
    auto c = pool_->Borrow();
    auto rows = c->Query(Select(t) + " WHERE org_id = $1 AND parent_id = $2 AND id = $3",
                         {org, parent, id});
    if (!rows) return rows.error();
    if (rows->empty()) return NotFound(kind, parent, id);
    return FromRow(kind, rows->front());
  }

  Result<Page> List(Kind kind, const std::string& org, const std::string& parent,
                    const ListQuery& query) override {
    const Table& t = TableOf(kind);
    std::string sql = Select(t) + " WHERE org_id = $1 AND parent_id = $2 AND id > $3";
    SqlParams params{org, parent, query.after};
    for (const auto& [column, value] : query.where) {
      if (std::find(t.columns.begin(), t.columns.end(), column) == t.columns.end()) {
        return MakeError(ErrorKind::kInvalidArgument,
                         "cannot filter " + std::string(KindName(kind)) + " by " + column);
      }
      params.push_back(value);
      sql += " AND " + column + " = $" + std::to_string(params.size());
    }
    int limit = std::clamp(query.limit, 1, 1000);
    sql += " ORDER BY id LIMIT " + std::to_string(limit + 1);
    auto c = pool_->Borrow();
    auto rows = c->Query(sql, params);
    if (!rows) return rows.error();
    Page page;
    for (const auto& row : *rows) {
      if (static_cast<int>(page.items.size()) == limit) {
        page.next = page.items.back().id;
        break;
      }
      page.items.push_back(FromRow(kind, row));
    }
    return page;
  }

  Result<Record> Update(Record record, int64_t expected_version) override {
    const Table& t = TableOf(record.kind);
    record.updated_at = UnixMillisNow();
    SqlParams params{record.body.dump(), record.updated_at, record.org_id, record.parent_id,
                     record.id};
    std::string sets = "body = $1, version = version + 1, updated_at = $2";
    for (const auto& column : t.columns) {
      params.push_back(Value(ColumnValue(record, column)));
      sets += ", " + column + " = $" + std::to_string(params.size());
    }
    std::string sql = "UPDATE " + std::string(t.name) + " SET " + sets +
                      " WHERE org_id = $3 AND parent_id = $4 AND id = $5";
    if (expected_version >= 0) {
      params.push_back(expected_version);
      sql += " AND version = $" + std::to_string(params.size());
    }
    sql += " RETURNING version, created_at";
    auto c = pool_->Borrow();
    auto rows = c->Query(sql, params);
    if (!rows) return Explain(rows.error(), record.kind, record.id);
    if (rows->empty()) {
      return MissingOrChanged(*c, record.kind, record.org_id, record.parent_id, record.id);
    }
    record.version = rows->front().Int(0);
    record.created_at = rows->front().Int(1);
    return record;
  }

  Result<void> Delete(Kind kind, const std::string& org, const std::string& parent,
                      const std::string& id, int64_t expected_version) override {
    const Table& t = TableOf(kind);
    std::string sql =
        "DELETE FROM " + std::string(t.name) + " WHERE org_id = $1 AND parent_id = $2 AND id = $3";
    SqlParams params{org, parent, id};
    if (expected_version >= 0) {
      params.push_back(expected_version);
      sql += " AND version = $4";
    }
    auto c = pool_->Borrow();
    auto n = c->Execute(sql, params);
    if (!n) return Explain(n.error(), kind, id);
    if (*n == 0) return MissingOrChanged(*c, kind, org, parent, id);
    return {};
  }

  Result<std::vector<std::string>> EnvironmentsUsingRunner(const std::string& org,
                                                           const std::string& runner) override {
    auto c = pool_->Borrow();
    auto rows = c->Query(
        "SELECT parent_id, id FROM environments WHERE org_id = $1 AND runner_id = $2 "
        "ORDER BY parent_id, id",
        {org, runner});
    if (!rows) return rows.error();
    std::vector<std::string> envs;
    for (const auto& r : *rows) envs.push_back(r.Text(0) + "/" + r.Text(1));
    return envs;
  }

 private:
  static std::optional<std::string> ColumnValue(const Record& r, const std::string& column) {
    auto it = r.columns.find(column);
    if (it == r.columns.end()) return std::nullopt;
    return it->second;
  }

  static std::string Select(const Table& t) {
    std::string sql = "SELECT parent_id, id, body, version, created_at, updated_at";
    for (const auto& c : t.columns) sql += ", " + c;
    return sql + ", org_id FROM " + std::string(t.name);
  }

  static Record FromRow(Kind kind, const SqlRow& row) {
    const Table& t = TableOf(kind);
    Record r;
    r.kind = kind;
    r.parent_id = row.Text(0);
    r.id = row.Text(1);
    r.body = json::parse(row.Text(2), nullptr, false);
    r.version = row.Int(3);
    r.created_at = row.Int(4);
    r.updated_at = row.Int(5);
    for (size_t i = 0; i < t.columns.size(); ++i) {
      r.columns[t.columns[i]] =
          row.IsNull(6 + i) ? std::nullopt : std::optional<std::string>(row.Text(6 + i));
    }
    r.org_id = row.Text(6 + t.columns.size());
    return r;
  }

  static Error NotFound(Kind kind, const std::string& parent, const std::string& id) {
    return MakeError(ErrorKind::kNotFound, std::string(KindName(kind)) + " " +
                                               (parent.empty() ? "" : parent + "/") + id +
                                               " does not exist");
  }

  // Names the object in a constraint error instead of the SQL.
  static Error Explain(Error e, Kind kind, const std::string& id) {
    std::string what = std::string(KindName(kind)) + " " + id;
    if (e.kind == ErrorKind::kAlreadyExists) {
      // Both databases name the violated columns: a rule's selector, or its id.
      bool selector =
          kind == Kind::kRunnerRule && e.message.find("project_id") != std::string::npos;
      e.message = selector ? "a runner rule with the same project and environment type exists"
                           : what + " already exists";
    } else if (e.kind == ErrorKind::kFailedPrecondition) {
      e.message = what + ": a referenced object is missing, or others still refer to it";
    }
    e.context.clear();
    return e;
  }

  static Error MissingOrChanged(SqlConnection& c, Kind kind, const std::string& org,
                                const std::string& parent, const std::string& id) {
    auto rows = c.Query("SELECT version FROM " + std::string(TableOf(kind).name) +
                            " WHERE org_id = $1 AND parent_id = $2 AND id = $3",
                        {org, parent, id});
    if (!rows) return rows.error();
    if (rows->empty()) return NotFound(kind, parent, id);
    return MakeError(ErrorKind::kConflict, std::string(KindName(kind)) + " " + id +
                                               " changed since it was read (now version " +
                                               std::to_string(rows->front().Int(0)) + ")");
  }

  std::unique_ptr<Pool> pool_;
  std::shared_ptr<crypto::KeyRing> keys_;
  std::unique_ptr<StateStore> states_;
  std::unique_ptr<DeploymentStore> deployments_;
  std::unique_ptr<DeploymentDataStore> deployment_data_;
  std::unique_ptr<ReplicaStore> replicas_;
  std::unique_ptr<AgentStore> agents_;
};

}  // namespace

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kProject:
      return "project";
    case Kind::kEnvType:
      return "env-type";
    case Kind::kEnvironment:
      return "env";
    case Kind::kRunner:
      return "runner";
    case Kind::kRunnerRule:
      return "runner-rule";
  }
  return "object";
}

Result<std::vector<Record>> ListAll(Store& store, Kind kind, const std::string& org,
                                    const std::string& parent) {
  std::vector<Record> all;
  ListQuery query{.limit = 1000};
  for (;;) {
    auto page = store.List(kind, org, parent, query);
    if (!page) return page.error();
    for (Record& record : page->items) all.push_back(std::move(record));
    if (page->next.empty()) return all;
    query.after = page->next;
  }
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, int pool_size,
                                         std::shared_ptr<crypto::KeyRing> keys) {
  bool postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
  std::string path = url.starts_with("sqlite:") ? url.substr(7) : url;
  auto open = [&]() { return postgres ? OpenPostgres(url) : OpenSqlite(path); };
  auto first = open();
  if (!first) return first.error();
  if (auto migrated = Migrate(**first); !migrated) return migrated.error();
  auto pool = std::make_unique<Pool>();
  pool->Add(std::move(*first));
  for (int i = 1; i < pool_size; ++i) {
    auto c = open();
    if (!c) return c.error();
    pool->Add(std::move(*c));
  }
  return std::unique_ptr<Store>(std::make_unique<SqlStore>(std::move(pool), std::move(keys)));
}

}  // namespace berth::store
