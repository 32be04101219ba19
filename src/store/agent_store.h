// What berthd keeps for kubernetes-agent runners (docs/agents.md): each runner's durable command
// queue (delivered at least once, each delivery with a receipt and a lease), the ends agents
// report for their runs (kept until the berthd that owns the run records them), the agents seen
// polling, and the ids of agent tokens already used (a replayed token is refused).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::store {

// An agent that polled this recently is connected (berthd holds a poll 25 s at most).
inline constexpr int64_t kAgentConnectedWithinMs = 60'000;

// A command's life: queued -> leased (an agent has it) -> done | rejected (the dead letters an
// operator reads); a leased one whose lease lapses is delivered again. queued -> expired (no
// agent took it in time) or dropped (its run was cancelled before any agent took it).
struct RunnerCommand {
  std::string org_id;
  std::string runner_id;
  int64_t seq = 0;   // order within the runner's queue
  std::string kind;  // create-job, cancel-job
  std::string run_id;
  nlohmann::json payload = nlohmann::json::object();  // never a secret: tokens are minted late
  std::string state;
  int64_t created_at = 0;  // milliseconds since the epoch, as every time here
  int64_t expires_at = 0;
  int64_t lease_until = 0;
  std::string receipt;  // the latest delivery's
  int64_t deliveries = 0;
  std::string agent;   // who took it last
  std::string reason;  // why it was rejected, expired or dropped
};

struct AgentSeen {
  std::string org_id;
  std::string runner_id;
  std::string agent;  // the agent's own name (its Pod's)
  std::string version;
  int64_t last_poll_at = 0;
};

// How an agent says a run's runner ended (launch::RunnerExit as JSON), kept for the run's owner.
struct AgentRunEnd {
  std::string org_id;
  std::string runner_id;
  std::string run_id;
  nlohmann::json outcome = nlohmann::json::object();
  int64_t at = 0;
};

class AgentStore {
 public:
  virtual ~AgentStore() = default;

  // Adds a command unless the runner's queue has one of this kind for this run (a launch
  // repeated after a restart): the command either way.
  virtual Result<RunnerCommand> Enqueue(const RunnerCommand& command) = 0;
  // The oldest command of the runner that is queued, or leased with a lapsed lease, and not past
  // its expiry, now leased to agent with receipt until lease_until. Of agents racing for it,
  // one gets it. nullopt: nothing to do.
  virtual Result<std::optional<RunnerCommand>> Lease(const std::string& org,
                                                     const std::string& runner,
                                                     const std::string& agent,
                                                     const std::string& receipt, int64_t now,
                                                     int64_t lease_until) = 0;
  // Settles or extends a leased command held with receipt; kConflict when receipt is not its
  // latest delivery's (another agent has it now) or the command is settled; kNotFound.
  virtual Result<RunnerCommand> Ack(const std::string& org, const std::string& runner, int64_t seq,
                                    const std::string& receipt) = 0;
  virtual Result<RunnerCommand> Reject(const std::string& org, const std::string& runner,
                                       int64_t seq, const std::string& receipt,
                                       const std::string& reason) = 0;
  virtual Result<RunnerCommand> Extend(const std::string& org, const std::string& runner,
                                       int64_t seq, const std::string& receipt,
                                       int64_t lease_until) = 0;
  // Drops the queued command of this kind for this run that no agent has taken: true. false:
  // there is none, or an agent took it already.
  virtual Result<bool> Drop(const std::string& org, const std::string& runner,
                            const std::string& kind, const std::string& run_id,
                            const std::string& reason) = 0;
  // The commands no agent took before their expiry, now expired: each returned once, whichever
  // berthd asks.
  virtual Result<std::vector<RunnerCommand>> Expire(int64_t now) = 0;
  // The runner's commands in state (empty: all), newest first, at most limit.
  virtual Result<std::vector<RunnerCommand>> List(const std::string& org, const std::string& runner,
                                                  const std::string& state, int limit) = 0;
  // The runner's create-job command for run, in whatever state.
  virtual Result<std::optional<RunnerCommand>> CreateJobOf(const std::string& org,
                                                           const std::string& runner,
                                                           const std::string& run_id) = 0;
  // Commands queued or leased.
  virtual Result<int64_t> Depth(const std::string& org, const std::string& runner) = 0;

  // Removes the settled commands (done, rejected, expired, dropped) created before before, and
  // the agents last seen before it; how many commands.
  virtual Result<int64_t> PruneSettled(int64_t before) = 0;

  virtual Result<void> RecordPoll(const AgentSeen& seen) = 0;
  // The runner's agents, the latest poll first.
  virtual Result<std::vector<AgentSeen>> Agents(const std::string& org,
                                                const std::string& runner) = 0;

  // Records an agent token's id until it expires (expired ids are forgotten on the way): false
  // when the id was used already.
  virtual Result<bool> UseTokenId(const std::string& id, int64_t expires_at, int64_t now) = 0;

  // The first end reported for a run wins: false when one was kept already.
  virtual Result<bool> PutRunEnd(const AgentRunEnd& end) = 0;
  // The kept ends of these runs.
  virtual Result<std::vector<AgentRunEnd>> RunEnds(const std::vector<std::string>& run_ids) = 0;
  virtual Result<void> DeleteRunEnd(const std::string& run_id) = 0;
};

}  // namespace berth::store
