// Store on SqlConnection: one implementation for both databases.
#include <chrono>
#include <optional>

#include "core/mutex.h"
#include "core/time_format.h"
#include "store/migrations.h"
#include "store/pool.h"
#include "store/sql.h"
#include "store/sql_deployment_data_store.h"
#include "store/sql_deployment_store.h"
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

class SqlStore final : public Store {
 public:
  explicit SqlStore(std::unique_ptr<Pool> pool)
      : pool_(std::move(pool)),
        states_(MakeSqlStateStore(*pool_)),
        deployments_(MakeSqlDeploymentStore(*pool_)),
        deployment_data_(MakeSqlDeploymentDataStore(*pool_)) {}

  StateStore& States() override { return *states_; }
  DeploymentStore& Deployments() override { return *deployments_; }
  DeploymentDataStore& DeploymentData() override { return *deployment_data_; }

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
        {name, candidate, UnixMillisNow()});
    if (!n) return n.error();
    auto rows = c->Query("SELECT value FROM shared_secrets WHERE name = $1", {name});
    if (!rows) return rows.error();
    if (rows->empty())
      return MakeError(ErrorKind::kInternal, "shared secret " + name + " vanished");
    return rows->front().Text(0);
  }

  Result<bool> OrganizationExists(const std::string& id) override {
    auto c = pool_->Borrow();
    auto rows = c->Query("SELECT 1 FROM organizations WHERE id = $1", {id});
    if (!rows) return rows.error();
    return !rows->empty();
  }

  Result<void> CreateToken(const ApiToken& token, const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    auto n = c->Execute(
        "INSERT INTO api_tokens (org_id, id, secret_hash, description, created_at) "
        "VALUES ($1, $2, $3, $4, $5)",
        {token.org_id, token.id, secret_hash, token.description, UnixMillisNow()});
    if (!n) return n.error();
    return {};
  }

  Result<ApiToken> FindToken(const std::string& secret_hash) override {
    auto c = pool_->Borrow();
    auto rows = c->Query(
        "SELECT org_id, id, description, created_at FROM api_tokens WHERE secret_hash = $1",
        {secret_hash});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no such token");
    const auto& r = rows->front();
    return ApiToken{r.Text(1), r.Text(0), r.Text(2), r.Int(3)};
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
  std::unique_ptr<StateStore> states_;
  std::unique_ptr<DeploymentStore> deployments_;
  std::unique_ptr<DeploymentDataStore> deployment_data_;
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

Result<std::unique_ptr<Store>> OpenStore(const std::string& url, int pool_size) {
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
  return std::unique_ptr<Store>(std::make_unique<SqlStore>(std::move(pool)));
}

}  // namespace berth::store
