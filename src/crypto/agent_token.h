// The tokens a kubernetes-agent signs for every request it makes to berthd (docs/agents.md):
// compact EdDSA JWTs (crypto/jws.h) with the agent's own key, short-lived, each id used once.
// berthd checks them against the keys registered on the runner (`key`, and `next_key` while
// agents roll over to a new one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "crypto/jws.h"

namespace berth::crypto {

inline constexpr std::string_view kAgentTokenAudience = "berth-agent-gateway";
// A token lives at most this long (exp - iat), and clocks may differ by this much.
inline constexpr int64_t kAgentTokenMaxLifetime = 300;
inline constexpr int64_t kAgentClockSkew = 60;

// Claims: iss "berth-agent", sub the runner, org, aud, iat, exp, jti.
struct AgentToken {
  std::string org;
  std::string runner;
  int64_t issued_at = 0;  // seconds since the epoch
  int64_t expires_at = 0;
  std::string id;  // jti: berthd refuses to see it twice
};

Result<std::string> MintAgentToken(const AgentToken& token, const Ed25519Signer& signer);
// Signed by one of public_keys (32 raw bytes each), for the agent gateway, issued no later than
// now + skew, not expired at now - skew, living at most kAgentTokenMaxLifetime, naming an org, a
// runner and an id of 16 to 128 characters. Whether the id was used before is the caller's to
// check. Every failure is kUnauthenticated with the reason.
Result<AgentToken> VerifyAgentToken(std::string_view token,
                                    const std::vector<std::string>& public_keys, int64_t now);

}  // namespace berth::crypto
