#include "store/sql_deployment_store.h"

#include <chrono>

#include "core/bounded_json.h"
#include "core/time_format.h"
#include "store/sealing.h"

namespace berth::store {
namespace {

using nlohmann::json;

constexpr const char* kColumns =
    "org_id, project_id, env_id, id, sequence, state, spec, transitions, result, run_id, "
    "created_at, updated_at, owner, cancel_requested_by";
// The same, of a query whose deployments table is named d.
constexpr const char* kColumnsOfD =
    "d.org_id, d.project_id, d.env_id, d.id, d.sequence, d.state, d.spec, d.transitions, "
    "d.result, d.run_id, d.created_at, d.updated_at, d.owner, d.cancel_requested_by";

json TransitionEntry(DeploymentState state, int64_t at, const std::string& reason) {
  json entry = {
      {"state", DeploymentStateName(state)},
      {"at",
       FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::milliseconds(at)), 3)}};
  if (!reason.empty()) entry["reason"] = reason;
  return entry;
}

// A row as a deployment; a spec berthd cannot read back is an internal error naming it.
Result<Deployment> FromRow(const SqlRow& r, const crypto::KeyRing* keys) {
  Deployment d;
  d.org_id = r.Text(0);
  d.project_id = r.Text(1);
  d.env_id = r.Text(2);
  d.id = r.Text(3);
  d.sequence = r.Int(4);
  d.state = ParseDeploymentState(r.Text(5)).value_or(DeploymentState::kFailed);
  auto stored = OpenValue(keys, r.Text(6), SpecCell(d.org_id, d.id));
  if (!stored) return MakeError(stored.error().kind, stored.error().message, "deployment " + d.id);
  auto spec = DeploymentSpec::FromStored(ParseBoundedJsonOrNull(*stored));
  if (!spec) return MakeError(ErrorKind::kInternal, spec.error().message, "deployment " + d.id);
  d.spec = std::move(*spec);
  d.transitions = json::parse(r.Text(7), nullptr, false);
  if (!r.IsNull(8)) d.result = DeploymentResultFromJson(json::parse(r.Text(8), nullptr, false));
  d.run_id = r.Text(9);
  d.created_at = r.Int(10);
  d.updated_at = r.Int(11);
  d.owner = r.Text(12);
  d.cancel_requested_by = r.Text(13);
  return d;
}

template <class Rows>
Result<std::vector<Deployment>> FromRows(const Rows& rows, const crypto::KeyRing* keys) {
  std::vector<Deployment> list;
  for (const auto& row : rows) {
    auto d = FromRow(row, keys);
    if (!d) return d.error();
    list.push_back(std::move(*d));
  }
  return list;
}

class SqlDeploymentStore final : public DeploymentStore {
 public:
  SqlDeploymentStore(Pool& pool, const crypto::KeyRing* keys) : pool_(pool), keys_(keys) {}

  Result<Deployment> Create(Deployment d) override {
    constexpr int kAttempts = 5;  // two creates in one environment race for a sequence number
    for (int attempt = 0;; ++attempt) {
      auto c = pool_.Borrow();
      auto tx = Transaction::Begin(*c);
      if (!tx) return tx.error();
      auto last = c->Query(
          "SELECT MAX(sequence) FROM deployments WHERE org_id = $1 AND project_id = $2 AND "
          "env_id = $3",
          {d.org_id, d.project_id, d.env_id});
      if (!last) return last.error();
      d.sequence = last->front().Int(0) + 1;
      d.state = DeploymentState::kQueued;
      d.created_at = d.updated_at = UnixMillisNow();
      d.transitions = json::array({TransitionEntry(d.state, d.created_at, "")});
      auto n = c->Execute(
          std::string("INSERT INTO deployments (") + kColumns +
              ", bundle_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, $10, $11, "
              "'', '', $12)",
          {d.org_id, d.project_id, d.env_id, d.id, d.sequence,
           std::string(DeploymentStateName(d.state)),
           SealValue(keys_, d.spec.ToJson().dump(), SpecCell(d.org_id, d.id)), d.transitions.dump(),
           d.run_id, d.created_at, d.updated_at, d.spec.source_bundle});
      if (!n && n.error().kind == ErrorKind::kAlreadyExists && attempt + 1 < kAttempts) {
        if (Get(d.org_id, d.id))
          return MakeError(ErrorKind::kAlreadyExists, "deployment " + d.id + " exists");
        continue;
      }
      if (!n && n.error().kind == ErrorKind::kFailedPrecondition)
        return MakeError(ErrorKind::kFailedPrecondition,
                         "environment " + d.project_id + "/" + d.env_id + " does not exist");
      if (!n) return n.error();
      if (auto committed = tx->Commit(); !committed) return committed.error();
      return d;
    }
  }

  Result<Deployment> Get(const std::string& org, const std::string& id) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        std::string("SELECT ") + kColumns + " FROM deployments WHERE org_id = $1 AND id = $2",
        {org, id});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no deployment " + id);
    return FromRow(rows->front(), keys_);
  }

  Result<Deployment> GetByRun(const std::string& run_id) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        std::string("SELECT ") + kColumns + " FROM deployments WHERE run_id = $1 AND run_id <> ''",
        {run_id});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no deployment runs " + run_id);
    return FromRow(rows->front(), keys_);
  }

  Result<RunOwner> OwnerOfRun(const std::string& run_id) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT org_id, id, state FROM deployments WHERE run_id = $1 AND run_id <> ''", {run_id});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no deployment runs " + run_id);
    const SqlRow& r = rows->front();
    return RunOwner{r.Text(0), r.Text(1),
                    ParseDeploymentState(r.Text(2)).value_or(DeploymentState::kFailed)};
  }

  Result<std::vector<Deployment>> ListForEnvironment(const std::string& org,
                                                     const std::string& project,
                                                     const std::string& env, int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(std::string("SELECT ") + kColumns +
                             " FROM deployments WHERE org_id = $1 AND project_id = $2 AND "
                             "env_id = $3 ORDER BY sequence DESC LIMIT $4",
                         {org, project, env, int64_t{limit}});
    if (!rows) return rows.error();
    return FromRows(*rows, keys_);
  }

  Result<Deployment> Transition(const std::string& org, const std::string& id, DeploymentState from,
                                DeploymentState to, const std::string& reason,
                                const TransitionChanges& changes) override {
    if (!CanTransition(from, to))
      return MakeError(ErrorKind::kFailedPrecondition,
                       "a deployment cannot go from " + std::string(DeploymentStateName(from)) +
                           " to " + std::string(DeploymentStateName(to)));
    auto c = pool_.Borrow();
    auto tx = Transaction::Begin(*c);
    if (!tx) return tx.error();
    auto rows = c->Query(
        std::string("SELECT ") + kColumns + " FROM deployments WHERE org_id = $1 AND id = $2",
        {org, id});
    if (!rows) return rows.error();
    if (rows->empty()) return MakeError(ErrorKind::kNotFound, "no deployment " + id);
    auto read = FromRow(rows->front(), keys_);
    if (!read) return read.error();
    Deployment d = std::move(*read);
    if (d.state != from)
      return MakeError(ErrorKind::kConflict, "deployment " + id + " is " +
                                                 std::string(DeploymentStateName(d.state)) +
                                                 ", not " + std::string(DeploymentStateName(from)));
    if (changes.expected_owner && d.owner != *changes.expected_owner)
      return MakeError(ErrorKind::kConflict, "deployment " + id + " is owned by replica '" +
                                                 d.owner + "', not '" + *changes.expected_owner +
                                                 "'");
    std::string read_owner = d.owner;
    d.state = to;
    d.updated_at = UnixMillisNow();
    d.transitions.push_back(TransitionEntry(to, d.updated_at, reason));
    if (changes.run_id) d.run_id = *changes.run_id;
    if (changes.result) d.result = *changes.result;
    if (changes.owner) d.owner = *changes.owner;
    if (IsTerminal(to)) d.cancel_requested_by.clear();
    SqlValue result =
        d.result.Empty() ? SqlValue(nullptr) : SqlValue(DeploymentResultToJson(d.result).dump());
    auto n = c->Execute(
        "UPDATE deployments SET state = $1, transitions = $2, run_id = $3, result = $4, "
        "updated_at = $5, owner = $6, cancel_requested_by = $7 WHERE org_id = $8 AND id = $9 "
        "AND state = $10 AND owner = $11",
        {std::string(DeploymentStateName(to)), d.transitions.dump(), d.run_id, result, d.updated_at,
         d.owner, d.cancel_requested_by, org, id, std::string(DeploymentStateName(from)),
         read_owner});
    if (!n && n.error().kind == ErrorKind::kAlreadyExists)
      return MakeError(ErrorKind::kConflict, "environment " + d.project_id + "/" + d.env_id +
                                                 " is held by another deployment");
    if (!n) return n.error();
    if (*n != 1) return MakeError(ErrorKind::kConflict, "deployment " + id + " changed meanwhile");
    if (auto committed = tx->Commit(); !committed) return committed.error();
    return d;
  }

  Result<std::vector<Deployment>> Startable(int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        std::string("SELECT ") + kColumns +
            " FROM deployments d WHERE d.state = 'queued' AND d.sequence = (SELECT MIN(q.sequence) "
            "FROM deployments q WHERE q.org_id = d.org_id AND q.project_id = d.project_id AND "
            "q.env_id = d.env_id AND q.state = 'queued') AND NOT EXISTS (SELECT 1 FROM "
            "deployments h WHERE h.org_id = d.org_id AND h.project_id = d.project_id AND "
            "h.env_id = d.env_id AND h.state IN ('dispatched', 'running', 'waiting_approval')) "
            "ORDER BY d.created_at, d.sequence LIMIT $1",
        {int64_t{limit}});
    if (!rows) return rows.error();
    return FromRows(*rows, keys_);
  }

  Result<std::vector<Deployment>> Holding() override {
    auto c = pool_.Borrow();
    auto rows = c->Query(std::string("SELECT ") + kColumns +
                         " FROM deployments WHERE state IN ('dispatched', 'running', "
                         "'waiting_approval') ORDER BY created_at");
    if (!rows) return rows.error();
    return FromRows(*rows, keys_);
  }

  Result<bool> TakeOver(const std::string& org, const std::string& id, const std::string& from,
                        const std::string& to, int64_t now) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "UPDATE deployments SET owner = $1 WHERE org_id = $2 AND id = $3 AND owner = $4 AND "
        "state IN ('dispatched', 'running') AND NOT EXISTS (SELECT 1 FROM replicas r WHERE "
        "r.id = $4 AND r.lease_until > $5)",
        {to, org, id, from, now});
    if (!n) return n.error();
    return *n == 1;
  }

  Result<bool> RequestCancel(const std::string& org, const std::string& id,
                             const std::string& who) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "UPDATE deployments SET cancel_requested_by = $1 WHERE org_id = $2 AND id = $3 AND "
        "state IN ('dispatched', 'running')",
        {who, org, id});
    if (!n) return n.error();
    return *n == 1;
  }

  Result<std::vector<std::pair<DeploymentState, int64_t>>> CountByState() override {
    auto c = pool_.Borrow();
    auto rows = c->Query("SELECT state, COUNT(*) FROM deployments GROUP BY state ORDER BY state");
    if (!rows) return rows.error();
    std::vector<std::pair<DeploymentState, int64_t>> counts;
    for (const auto& row : *rows) {
      if (auto state = ParseDeploymentState(row.Text(0))) counts.emplace_back(*state, row.Int(1));
    }
    return counts;
  }

  Result<int64_t> PruneEnded(int64_t before, int limit) override {
    auto c = pool_.Borrow();
    return c->Execute(
        "DELETE FROM deployments WHERE (org_id, id) IN (SELECT d.org_id, d.id FROM deployments d "
        "WHERE d.state IN ('succeeded', 'failed', 'cancelled') AND d.updated_at < $1 AND "
        "d.sequence < (SELECT MAX(n.sequence) FROM deployments n WHERE n.org_id = d.org_id AND "
        "n.project_id = d.project_id AND n.env_id = d.env_id AND n.state IN ('succeeded', "
        "'failed', 'cancelled')) ORDER BY d.updated_at LIMIT $2)",
        {before, static_cast<int64_t>(limit)});
  }

  Result<std::map<std::string, EnvironmentActivity>> ActivityOf(const std::string& org) override {
    auto c = pool_.Borrow();
    std::map<std::string, EnvironmentActivity> activity;
    auto key = [](const Deployment& d) { return d.project_id + "/" + d.env_id; };
    // The newest of each environment: its highest sequence, found in the unique index.
    auto newest = c->Query(std::string("SELECT ") + kColumnsOfD +
                               " FROM deployments d JOIN (SELECT project_id, env_id, "
                               "MAX(sequence) AS s FROM deployments WHERE org_id = $1 GROUP BY "
                               "project_id, env_id) m ON d.project_id = m.project_id AND "
                               "d.env_id = m.env_id AND d.sequence = m.s WHERE d.org_id = $1",
                           {org});
    if (!newest) return newest.error();
    auto newest_rows = FromRows(*newest, keys_);
    if (!newest_rows) return newest_rows.error();
    for (Deployment& d : *newest_rows) activity[key(d)].newest = std::move(d);
    auto holders = c->Query(std::string("SELECT ") + kColumns +
                                " FROM deployments WHERE org_id = $1 AND state IN "
                                "('dispatched', 'running', 'waiting_approval')",
                            {org});
    if (!holders) return holders.error();
    auto holder_rows = FromRows(*holders, keys_);
    if (!holder_rows) return holder_rows.error();
    for (Deployment& d : *holder_rows) activity[key(d)].holder = std::move(d);
    auto queued = c->Query(
        "SELECT project_id, env_id, COUNT(*) FROM deployments WHERE org_id = $1 AND "
        "state = 'queued' GROUP BY project_id, env_id",
        {org});
    if (!queued) return queued.error();
    for (const auto& r : *queued) activity[r.Text(0) + "/" + r.Text(1)].queued = r.Int(2);
    return activity;
  }

  Result<std::vector<EnvironmentQueue>> Queues() override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT org_id, project_id, env_id, COUNT(*), MIN(created_at) FROM deployments WHERE "
        "state = 'queued' GROUP BY org_id, project_id, env_id ORDER BY org_id, project_id, "
        "env_id");
    if (!rows) return rows.error();
    std::vector<EnvironmentQueue> queues;
    for (const auto& r : *rows)
      queues.push_back({r.Text(0), r.Text(1), r.Text(2), r.Int(3), r.Int(4)});
    return queues;
  }

 private:
  Pool& pool_;
  const crypto::KeyRing* keys_;
};

}  // namespace

std::unique_ptr<DeploymentStore> MakeSqlDeploymentStore(Pool& pool, const crypto::KeyRing* keys) {
  return std::make_unique<SqlDeploymentStore>(pool, keys);
}

}  // namespace berth::store
