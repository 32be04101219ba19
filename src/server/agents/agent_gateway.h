// The agent gateway: what a kubernetes-agent calls, under /agents/v1/orgs/{org}/runners/{runner}
// (docs/agents.md), each request with a short-lived EdDSA JWT it signs with its key
// (crypto/agent_token.h) that berthd checks against the runner's keys and sees once. It long-polls
// the runner's command queue, settles each command with the receipt it was given (ack, reject,
// extend), reports what its Jobs do (events) and how they end, and asks which runs are live
// after a restart. An agent of another runner or organization gets nothing of this one's.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/clock.h"
#include "crypto/agent_token.h"
#include "crypto/jws.h"
#include "launch/launcher.h"
#include "net/http_server.h"
#include "server/api/router.h"
#include "server/change_feed.h"
#include "store/store.h"

namespace berth::server {

inline constexpr std::string_view kAgentGatewayPrefix = "/agents/v1/";

struct AgentGatewayOptions {
  const crypto::Ed25519Signer* signer = nullptr;  // mints run tokens as commands are delivered
  launch::RunObserver* events = nullptr;          // hears what agents say about runs
  ChangeFeed* commands = nullptr;     // moves when a command is queued: a waiting poll looks again
  ChangeFeed* ends = nullptr;         // notified when an agent reports a run's end
  Clock* clock = nullptr;             // null: the system's
  std::chrono::seconds lease{90};     // an unacknowledged command returns to the queue after this
  std::chrono::seconds max_wait{25};  // the longest a poll is held
};

// The agent token of request (its bearer) when a key of runner org/runner signed it for that
// runner and it has not expired: kUnauthenticated otherwise, kPermissionDenied for a token of
// another runner. Whether its jti was seen before is the gateway's to check.
Result<crypto::AgentToken> AuthenticateAgent(store::Store& store, const std::string& org,
                                             const std::string& runner,
                                             const net::ServerRequest& request, int64_t now);

class AgentGateway {
 public:
  AgentGateway(store::Store& store, AgentGatewayOptions options);
  static bool Serves(const std::string& target) { return target.starts_with(kAgentGatewayPrefix); }
  net::ServerResponse Handle(const net::ServerRequest& request) const {
    return router_.Dispatch(request);
  }

 private:
  struct Agent {
    std::string org, runner;
  };
  using Body = std::function<net::ServerResponse(const Agent&)>;
  // body(agent) for a request whose token a key of the path's runner signed, for that runner,
  // never seen before; else 401 (or 403 for a token of another runner).
  net::ServerResponse ForAgent(const RouteRequest& r, const Body& body) const;
  // The next command leased to agent name, as the agent receives it; nullopt: none.
  Result<std::optional<nlohmann::json>> TakeNext(const Agent& agent, const std::string& name) const;
  net::ServerResponse Next(const RouteRequest& r, const Agent& agent) const;
  net::ServerResponse Settle(const RouteRequest& r, const Agent& agent,
                             const std::string& action) const;
  // body for a run this runner's agents were asked to launch; 404 otherwise.
  net::ServerResponse ForOwnRun(const RouteRequest& r, const Agent& agent,
                                const std::function<net::ServerResponse()>& body) const;
  net::ServerResponse Event(const RouteRequest& r, const Agent& agent) const;
  net::ServerResponse End(const RouteRequest& r, const Agent& agent) const;
  net::ServerResponse LiveRuns(const Agent& agent) const;

  store::Store& store_;
  const AgentGatewayOptions options_;
  Clock& clock_;
  Router router_;
};

}  // namespace berth::server
