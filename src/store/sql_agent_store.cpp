#include "store/sql_agent_store.h"

namespace berth::store {
namespace {

using nlohmann::json;

constexpr std::string_view kColumns =
    "org_id, runner_id, seq, kind, run_id, payload, state, created_at, expires_at, lease_until, "
    "receipt, deliveries, agent, reason";

// A command that may be delivered now: never delivered and not expired, or delivered to an
// agent whose lease lapsed (it may have died holding it; the Job name makes a repeat harmless).
constexpr std::string_view kDeliverable =
    "((state = 'queued' AND expires_at > $3) OR (state = 'leased' AND lease_until <= $3))";

std::string Sql(std::initializer_list<std::string_view> parts) {
  std::string sql;
  for (std::string_view part : parts) sql += part;
  return sql;
}

RunnerCommand CommandOf(const SqlRow& r) {
  json payload = json::parse(r.Text(5), nullptr, false);
  return RunnerCommand{.org_id = r.Text(0),
                       .runner_id = r.Text(1),
                       .seq = r.Int(2),
                       .kind = r.Text(3),
                       .run_id = r.Text(4),
                       .payload = payload.is_object() ? payload : json::object(),
                       .state = r.Text(6),
                       .created_at = r.Int(7),
                       .expires_at = r.Int(8),
                       .lease_until = r.Int(9),
                       .receipt = r.Text(10),
                       .deliveries = r.Int(11),
                       .agent = r.Text(12),
                       .reason = r.Text(13)};
}

std::vector<RunnerCommand> CommandsOf(const std::vector<SqlRow>& rows) {
  std::vector<RunnerCommand> commands;
  commands.reserve(rows.size());
  for (const SqlRow& r : rows) commands.push_back(CommandOf(r));
  return commands;
}

class SqlAgentStore final : public AgentStore {
 public:
  explicit SqlAgentStore(Pool& pool) : pool_(pool) {}

  Result<RunnerCommand> Enqueue(const RunnerCommand& command) override {
    auto c = pool_.Borrow();
    // Two berthd may enqueue for one runner at once (PostgreSQL): the loser of a sequence
    // number tries the next one.
    for (int attempt = 0; attempt < 8; ++attempt) {
      if (auto found = Find(*c, command.org_id, command.runner_id, command.kind, command.run_id);
          !found || *found)
        return found ? Result<RunnerCommand>(**found) : Result<RunnerCommand>(found.error());
      auto inserted = c->Query(
          Sql({"INSERT INTO runner_commands (", kColumns,
               ") SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4, $5, 'queued', $6, $7, 0, '', "
               "0, '', '' FROM runner_commands WHERE org_id = $1 AND runner_id = $2 RETURNING ",
               kColumns}),
          {command.org_id, command.runner_id, command.kind, command.run_id, command.payload.dump(),
           command.created_at, command.expires_at});
      if (inserted && !inserted->empty()) return CommandOf(inserted->front());
      if (!inserted && inserted.error().kind != ErrorKind::kAlreadyExists) return inserted.error();
    }
    return MakeError(ErrorKind::kUnavailable,
                     "runner " + command.runner_id + "'s queue is too busy to take a command");
  }

  Result<std::optional<RunnerCommand>> Lease(const std::string& org, const std::string& runner,
                                             const std::string& agent, const std::string& receipt,
                                             int64_t now, int64_t lease_until) override {
    auto c = pool_.Borrow();
    // The oldest deliverable command, taken only if it is still deliverable when the update
    // reaches it: of two agents racing for it, the second updates nothing.
    constexpr std::string_view kLease =
        "UPDATE runner_commands SET state = 'leased', lease_until = $4, receipt = $5, "
        "deliveries = deliveries + 1, agent = $6 WHERE org_id = $1 AND runner_id = $2 AND ";
    constexpr std::string_view kOldest =
        " AND seq = (SELECT seq FROM runner_commands WHERE org_id = $1 AND runner_id = $2 AND ";
    auto rows = c->Query(Sql({kLease, kDeliverable, kOldest, kDeliverable,
                              " ORDER BY seq LIMIT 1) RETURNING ", kColumns}),
                         {org, runner, now, lease_until, receipt, agent});
    if (!rows) return rows.error();
    if (rows->empty()) return std::optional<RunnerCommand>();
    return std::optional<RunnerCommand>(CommandOf(rows->front()));
  }

  Result<RunnerCommand> Ack(const std::string& org, const std::string& runner, int64_t seq,
                            const std::string& receipt) override {
    return Settle(org, runner, seq, receipt, "state = 'done'", {});
  }

  Result<RunnerCommand> Reject(const std::string& org, const std::string& runner, int64_t seq,
                               const std::string& receipt, const std::string& reason) override {
    return Settle(org, runner, seq, receipt, "state = 'rejected', reason = $5", {reason});
  }

  Result<RunnerCommand> Extend(const std::string& org, const std::string& runner, int64_t seq,
                               const std::string& receipt, int64_t lease_until) override {
    return Settle(org, runner, seq, receipt, "lease_until = $5", {lease_until});
  }

  Result<bool> Drop(const std::string& org, const std::string& runner, const std::string& kind,
                    const std::string& run_id, const std::string& reason) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "UPDATE runner_commands SET state = 'dropped', reason = $5 WHERE org_id = $1 AND "
        "runner_id = $2 AND kind = $3 AND run_id = $4 AND state = 'queued'",
        {org, runner, kind, run_id, reason});
    if (!n) return n.error();
    return *n > 0;
  }

  Result<std::vector<RunnerCommand>> Expire(int64_t now) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        Sql({"UPDATE runner_commands SET state = 'expired', reason = 'no agent took it before "
             "its expiry' WHERE state = 'queued' AND expires_at <= $1 RETURNING ",
             kColumns}),
        {now});
    if (!rows) return rows.error();
    return CommandsOf(*rows);
  }

  Result<std::vector<RunnerCommand>> List(const std::string& org, const std::string& runner,
                                          const std::string& state, int limit) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(Sql({"SELECT ", kColumns,
                              " FROM runner_commands WHERE org_id = $1 AND runner_id = $2 AND "
                              "($3 = '' OR state = $3) ORDER BY seq DESC LIMIT $4"}),
                         {org, runner, state, int64_t{limit}});
    if (!rows) return rows.error();
    return CommandsOf(*rows);
  }

  Result<std::optional<RunnerCommand>> CreateJobOf(const std::string& org,
                                                   const std::string& runner,
                                                   const std::string& run_id) override {
    auto c = pool_.Borrow();
    return Find(*c, org, runner, "create-job", run_id);
  }

  Result<int64_t> Depth(const std::string& org, const std::string& runner) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT COUNT(*) FROM runner_commands WHERE org_id = $1 AND runner_id = $2 AND "
        "state IN ('queued', 'leased')",
        {org, runner});
    if (!rows) return rows.error();
    return rows->empty() ? int64_t{0} : rows->front().Int(0);
  }

  Result<int64_t> PruneSettled(int64_t before) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "DELETE FROM runner_commands WHERE created_at < $1 AND state IN ('done', 'rejected', "
        "'expired', 'dropped')",
        {before});
    if (!n) return n.error();
    if (auto agents = c->Execute("DELETE FROM runner_agents WHERE last_poll_at < $1", {before});
        !agents)
      return agents.error();
    return *n;
  }

  Result<void> RecordPoll(const AgentSeen& seen) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "INSERT INTO runner_agents (org_id, runner_id, agent, version, last_poll_at) VALUES "
        "($1, $2, $3, $4, $5) ON CONFLICT (org_id, runner_id, agent) DO UPDATE SET version = $4, "
        "last_poll_at = $5",
        {seen.org_id, seen.runner_id, seen.agent, seen.version, seen.last_poll_at});
    if (!n) return n.error();
    return {};
  }

  Result<std::vector<AgentSeen>> Agents(const std::string& org,
                                        const std::string& runner) override {
    auto c = pool_.Borrow();
    auto rows = c->Query(
        "SELECT org_id, runner_id, agent, version, last_poll_at FROM runner_agents WHERE "
        "org_id = $1 AND runner_id = $2 ORDER BY last_poll_at DESC, agent",
        {org, runner});
    if (!rows) return rows.error();
    std::vector<AgentSeen> agents;
    for (const SqlRow& r : *rows)
      agents.push_back({r.Text(0), r.Text(1), r.Text(2), r.Text(3), r.Int(4)});
    return agents;
  }

  Result<bool> UseTokenId(const std::string& id, int64_t expires_at, int64_t now) override {
    auto c = pool_.Borrow();
    if (auto n = c->Execute("DELETE FROM agent_token_ids WHERE expires_at < $1", {now}); !n)
      return n.error();
    auto n = c->Execute("INSERT INTO agent_token_ids (id, expires_at) VALUES ($1, $2)",
                        {id, expires_at});
    if (!n && n.error().kind == ErrorKind::kAlreadyExists) return false;
    if (!n) return n.error();
    return true;
  }

  Result<bool> PutRunEnd(const AgentRunEnd& end) override {
    auto c = pool_.Borrow();
    auto n = c->Execute(
        "INSERT INTO agent_run_ends (run_id, org_id, runner_id, outcome, at) VALUES "
        "($1, $2, $3, $4, $5)",
        {end.run_id, end.org_id, end.runner_id, end.outcome.dump(), end.at});
    if (!n && n.error().kind == ErrorKind::kAlreadyExists) return false;
    if (!n) return n.error();
    return true;
  }

  Result<std::vector<AgentRunEnd>> RunEnds(const std::vector<std::string>& run_ids) override {
    std::vector<AgentRunEnd> ends;
    if (run_ids.empty()) return ends;
    std::string sql =
        "SELECT run_id, org_id, runner_id, outcome, at FROM agent_run_ends WHERE run_id IN (";
    SqlParams params;
    for (const std::string& id : run_ids) {
      sql += (params.empty() ? "$" : ", $") + std::to_string(params.size() + 1);
      params.emplace_back(id);
    }
    sql += ")";
    auto c = pool_.Borrow();
    auto rows = c->Query(sql, params);
    if (!rows) return rows.error();
    for (const SqlRow& r : *rows) {
      json outcome = json::parse(r.Text(3), nullptr, false);
      ends.push_back({.org_id = r.Text(1),
                      .runner_id = r.Text(2),
                      .run_id = r.Text(0),
                      .outcome = outcome.is_object() ? outcome : json::object(),
                      .at = r.Int(4)});
    }
    return ends;
  }

  Result<void> DeleteRunEnd(const std::string& run_id) override {
    auto c = pool_.Borrow();
    if (auto n = c->Execute("DELETE FROM agent_run_ends WHERE run_id = $1", {run_id}); !n)
      return n.error();
    return {};
  }

 private:
  static Result<std::optional<RunnerCommand>> Find(SqlConnection& c, const std::string& org,
                                                   const std::string& runner,
                                                   const std::string& kind,
                                                   const std::string& run_id) {
    auto rows = c.Query(Sql({"SELECT ", kColumns,
                             " FROM runner_commands WHERE org_id = $1 AND runner_id = $2 AND "
                             "kind = $3 AND run_id = $4"}),
                        {org, runner, kind, run_id});
    if (!rows) return rows.error();
    if (rows->empty()) return std::optional<RunnerCommand>();
    return std::optional<RunnerCommand>(CommandOf(rows->front()));
  }

  // Applies set to the leased command held with receipt ($1..$4: org, runner, seq, receipt;
  // extra from $5).
  Result<RunnerCommand> Settle(const std::string& org, const std::string& runner, int64_t seq,
                               const std::string& receipt, std::string_view set,
                               const SqlParams& extra) {
    auto c = pool_.Borrow();
    SqlParams params{org, runner, seq, receipt};
    params.insert(params.end(), extra.begin(), extra.end());
    auto rows = c->Query(Sql({"UPDATE runner_commands SET ", set,
                              " WHERE org_id = $1 AND runner_id = $2 AND seq = $3 AND "
                              "receipt = $4 AND state = 'leased' RETURNING ",
                              kColumns}),
                         params);
    if (!rows) return rows.error();
    if (!rows->empty()) return CommandOf(rows->front());
    auto now = c->Query(Sql({"SELECT ", kColumns,
                             " FROM runner_commands WHERE org_id = $1 AND runner_id = $2 AND "
                             "seq = $3"}),
                        {org, runner, seq});
    if (!now) return now.error();
    if (now->empty())
      return MakeError(ErrorKind::kNotFound,
                       "runner " + runner + " has no command " + std::to_string(seq));
    RunnerCommand current = CommandOf(now->front());
    if (current.state != "leased")
      return MakeError(ErrorKind::kConflict,
                       "command " + std::to_string(seq) + " is " + current.state + " already");
    return MakeError(ErrorKind::kConflict, "command " + std::to_string(seq) +
                                               " was delivered again since: the receipt is stale");
  }

  Pool& pool_;
};

}  // namespace

std::unique_ptr<AgentStore> MakeSqlAgentStore(Pool& pool) {
  return std::make_unique<SqlAgentStore>(pool);
}

}  // namespace berth::store
