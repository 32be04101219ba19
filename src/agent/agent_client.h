// The agent's side of the agent gateway (server/agents/agent_gateway.h): every request signed
// with a fresh token (crypto/agent_token.h) from the agent's own key, over HTTPS with the TLS
// settings it was given (a CA for a proxy that re-signs, a client certificate).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "crypto/jws.h"
#include "launch/launcher.h"
#include "net/http_client.h"

namespace berth::agent {

struct AgentIdentity {
  std::string url;  // berthd, without a trailing slash
  std::string org;
  std::string runner;
};

class AgentClient {
 public:
  AgentClient(AgentIdentity identity, crypto::Ed25519Signer signer,
              std::unique_ptr<net::HttpClient> http);

  // The next command, held up to wait_seconds by berthd until one is queued; nullopt: none came.
  // stop, asked about once a second, ends the wait early (kCancelled).
  Result<std::optional<nlohmann::json>> Next(const std::string& name, const std::string& version,
                                             int wait_seconds, std::function<bool()> stop = {});
  // ack, reject (with a reason) or extend a command held with receipt.
  Result<void> Settle(int64_t seq, const std::string& action, const std::string& receipt,
                      const std::string& reason = "");
  Result<void> Event(const std::string& run_id, const launch::LaunchEvent& event);
  Result<void> End(const std::string& run_id, const nlohmann::json& report);
  // The runs this runner's agents launched that berthd still waits for (no tokens).
  Result<std::vector<launch::LaunchRequest>> LiveRuns();

 private:
  Result<nlohmann::json> Call(const std::string& method, const std::string& path,
                              const nlohmann::json& body, std::chrono::milliseconds timeout,
                              std::function<bool()> stop = {});

  const AgentIdentity identity_;
  const crypto::Ed25519Signer signer_;
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace berth::agent
