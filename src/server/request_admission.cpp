#include "server/request_admission.h"

#include "server/api/api.h"
#include "server/api/router.h"
#include "server/api/session_credentials.h"
#include "server/gateway/run_gateway.h"
#include "server/run_token_header.h"
#include "server/statebackend/state_backend.h"
#include "store/store.h"

namespace berth::server {
namespace {

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
  const std::string path = head.target.substr(0, head.target.find('?'));
  if (StateBackend::Serves(path) || RunGateway::Serves(path)) {
    auto token =
        run_tokens_.Verify(RunTokenOf(head), crypto::kRunTokenAudience, clock_.WallSeconds());
    if (!token)
      admission.refusal = Unauthenticated("a run token is required: " + token.error().message);
    return admission;
  }
  if (!path.starts_with("/orgs/")) return admission;
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

}  // namespace berth::server
