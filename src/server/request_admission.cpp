#include "server/request_admission.h"

#include "core/decimal.h"
#include "net/request_fields.h"
#include "server/agents/agent_gateway.h"
#include "server/api/api.h"
#include "server/api/router.h"
#include "server/api/session_credentials.h"
#include "server/gateway/run_gateway.h"
#include "server/statebackend/state_backend.h"
#include "store/store.h"

namespace berth::server {
namespace {

// Bodies up to this size are read before their token is checked (once, by the handler): reading
// one costs less than a second token lookup on every API write would. Larger ones, and those of
// unknown size (chunked), are admitted on their token first.
constexpr uint64_t kReadUncheckedUpTo = 64 << 10;

bool LargeOrUnknown(const net::ServerRequest& head) {
  auto length = head.headers.find("content-length");
  if (length == head.headers.end()) return true;
  auto bytes = ParseDecimal<uint64_t>(length->second);
  return !bytes || *bytes > kReadUncheckedUpTo;
}

net::ServerResponse Unauthenticated(const std::string& message) {
  auto response = ErrorResponse(401, "Unauthenticated", message + " (the body was not read)");
  response.headers["WWW-Authenticate"] = "Bearer";
  return response;
}

}  // namespace

size_t BodyLimit(std::string_view method, std::string_view target) {
  constexpr size_t kApiBody = size_t{1} << 20, kFileBody = size_t{64} << 20;
  std::string path(target.substr(0, target.find('?')));
  bool file = StateBackend::Serves(path) ||
              (RunGateway::Serves(path) && path.find("/artifacts/") != std::string::npos) ||
              (method == "POST" && path.starts_with("/orgs/") &&
               (path.ends_with("/bundles") || path.ends_with("/state/versions")));
  return file ? kFileBody : kApiBody;
}

net::Admission RequestAdmission::operator()(const net::ServerRequest& head) const {
  net::Admission admission{.body_limit = BodyLimit(head.method, head.target)};
  if (!LargeOrUnknown(head)) return admission;
  const std::string path = head.target.substr(0, head.target.find('?'));
  if (StateBackend::Serves(path) || RunGateway::Serves(path)) {
    auto token = run_tokens_.Verify(net::RequestCredential(head), crypto::kRunTokenAudience,
                                    clock_.WallSeconds());
    if (!token)
      admission.refusal = Unauthenticated("a run token is required: " + token.error().message);
    return admission;
  }
  if (AgentGateway::Serves(path)) {
    admission.refusal = AdmitAgent(head, path);
    return admission;
  }
  if (!path.starts_with("/orgs/")) {
    // The other surfaces (the dashboard's login, unknown paths) take small bodies only.
    admission.refusal = ErrorResponse(413, "PayloadTooLarge",
                                      "a body over 64 KiB or of unknown size is taken only by the "
                                      "API, the state backend and the runner and agent gateways "
                                      "(the body was not read)");
    return admission;
  }
  const std::string secret = ApiSecretOf(head.headers).secret;
  if (secret.empty()) {
    admission.refusal = Unauthenticated("a bearer token is required");
    return admission;
  }
  auto token = store_.FindToken(HashToken(secret));
  if (!token && token.error().kind == ErrorKind::kNotFound) {
    admission.refusal = Unauthenticated("the token is not valid");
  } else if (!token) {
    admission.refusal = ErrorResponse(token.error());
  } else if (token->expires_at != 0 && clock_.WallMillis() >= token->expires_at) {
    admission.refusal = Unauthenticated("the token expired");
  }
  return admission;
}

std::optional<net::ServerResponse> RequestAdmission::AdmitAgent(const net::ServerRequest& head,
                                                                const std::string& path) const {
  // /agents/v1/orgs/{org}/runners/{runner}/...
  std::vector<std::string> parts;
  for (size_t at = kAgentGatewayPrefix.size(); at <= path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    parts.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  // Decoded as the gateway's router decodes them, or a token good there is refused here.
  std::string org, runner;
  if (parts.size() < 4 || parts[0] != "orgs" || parts[2] != "runners" ||
      !PercentDecode(parts[1], org) || !PercentDecode(parts[3], runner))
    return Unauthenticated("an agent token for a runner's path is required");
  auto token = AuthenticateAgent(store_, org, runner, head, clock_.WallSeconds());
  if (!token && token.error().kind == ErrorKind::kUnauthenticated)
    return Unauthenticated(token.error().message);
  if (!token) return ErrorResponse(token.error());
  return std::nullopt;
}

}  // namespace berth::server
