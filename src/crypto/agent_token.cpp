#include "crypto/agent_token.h"

namespace berth::crypto {
namespace {

Error Unauthenticated(std::string message) {
  return MakeError(ErrorKind::kUnauthenticated, "agent token: " + std::move(message));
}

}  // namespace

Result<std::string> MintAgentToken(const AgentToken& token, const Ed25519Signer& signer) {
  return SignJws({{"iss", "berth-agent"},
                  {"sub", token.runner},
                  {"org", token.org},
                  {"aud", kAgentTokenAudience},
                  {"iat", token.issued_at},
                  {"exp", token.expires_at},
                  {"jti", token.id}},
                 signer);
}

Result<AgentToken> VerifyAgentToken(std::string_view text,
                                    const std::vector<std::string>& public_keys, int64_t now) {
  auto jws = Jws::Parse(text);
  if (!jws) return Unauthenticated(jws.error().message);
  bool signed_by_runner = false;
  for (const std::string& key : public_keys)
    signed_by_runner = signed_by_runner || jws->Verify(key);
  if (!signed_by_runner) return Unauthenticated("not signed by a key of the runner");
  AgentToken token{jws->TextClaim("org"), jws->TextClaim("sub"), jws->IntClaim("iat"),
                   jws->IntClaim("exp"), jws->TextClaim("jti")};
  if (jws->TextClaim("aud") != kAgentTokenAudience)
    return Unauthenticated("the audience must be " + std::string(kAgentTokenAudience));
  if (token.issued_at <= 0 || token.expires_at <= token.issued_at)
    return Unauthenticated("iat and exp must be times with exp after iat");
  if (token.expires_at - token.issued_at > kAgentTokenMaxLifetime)
    return Unauthenticated("it may live " + std::to_string(kAgentTokenMaxLifetime) + " s at most");
  if (token.issued_at > now + kAgentClockSkew)
    return Unauthenticated("issued in the future (the agent's clock is ahead)");
  if (token.expires_at <= now - kAgentClockSkew) return Unauthenticated("it has expired");
  if (token.org.empty() || token.runner.empty())
    return Unauthenticated("it must name its org and runner (sub)");
  if (token.id.size() < 16 || token.id.size() > 128)
    return Unauthenticated("jti must be 16 to 128 characters");
  return token;
}

}  // namespace berth::crypto
