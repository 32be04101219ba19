// The runner gateway: the routes a runner in gateway mode uses with its run token, for its own
// run only, under /runs/v1/{run}: fetch the module bundle, the rendered inputs and the plan it
// was approved to apply, and its organization's plan-hash key; append log chunks (numbered, so a
// retried chunk is stored once); upload artifacts (plan, outputs, state); post its result. A token
// for another run, an expired token, or a run that has ended is refused. And an OpenID Connect ID
// token for the module's providers, when the run's environment asks for one (docs/oidc.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "core/clock.h"
#include "crypto/jws.h"
#include "net/http_server.h"
#include "server/api/router.h"
#include "server/change_feed.h"
#include "server/oidc/oidc_issuer.h"
#include "store/store.h"

namespace berth::server {

inline constexpr std::string_view kRunGatewayPrefix = "/runs/v1/";

struct RunGatewayOptions {
  std::string public_key;  // the run tokens' Ed25519 key (32 raw bytes)
  // What mints the apply run's token a kept runner is handed (/next), and for how long; null:
  // no runner is ever handed an apply.
  const crypto::Ed25519Signer* signer = nullptr;
  std::chrono::seconds token_lifetime{6 * 3600};
  Clock* clock = nullptr;        // what tokens expire by; null: the system's
  ChangeFeed* feed = nullptr;    // told of every stored chunk; may be null
  OidcIssuer* issuer = nullptr;  // what signs runs' ID tokens; null: none is given
  size_t max_log_chunk = size_t{1} << 20;
};

class RunGateway {
 public:
  RunGateway(store::Store& store, RunGatewayOptions options);
  static bool Serves(const std::string& target) { return target.starts_with(kRunGatewayPrefix); }
  net::ServerResponse Handle(const net::ServerRequest& request) const {
    return router_.Dispatch(request);
  }

 private:
  using Body = std::function<net::ServerResponse(const store::Deployment&)>;
  // The request's token, if it is one for the run its path names; else the refusal.
  Result<crypto::RunToken> TokenForRun(const RouteRequest& r, net::ServerResponse& refusal) const;
  // The deployment the request's token may act on, or the refusal.
  net::ServerResponse ForOwnRun(const RouteRequest& r, const Body& body) const;
  // Asked by a plan run's runner kept for the apply, with the plan run's token (its run has
  // ended): {"wait": true} while the plan waits for approval (or the dispatcher decides), the
  // apply run (op, run_id, token, approved plan) once the dispatcher handed it to this runner,
  // 410 once it never will be.
  net::ServerResponse Next(const RouteRequest& r) const;
  net::ServerResponse Bundle(const store::Deployment& d) const;
  net::ServerResponse Inputs(const store::Deployment& d) const;
  net::ServerResponse Plan(const store::Deployment& d) const;
  // The organization's key for plan hashes: a hash then names a plan's effect without being a
  // way to test guesses of its (sensitive) values.
  net::ServerResponse PlanKey(const store::Deployment& d) const;
  // The environment's state encryption key (32 bytes, base64), made at its first use; 404
  // for an environment whose state_encryption is not berth.
  net::ServerResponse StateKey(const store::Deployment& d) const;
  // The run's ID token ({"token", and the environment's "aws", "azure", "gcp" settings}): sub
  // org:O:project:P:env:E:phase:plan|apply, the environment's audience; 404 when the
  // environment asks for none.
  net::ServerResponse IdToken(const std::string& run, const store::Deployment& d) const;
  net::ServerResponse AppendLog(const RouteRequest& r, const store::Deployment& d) const;
  net::ServerResponse PutArtifact(const RouteRequest& r, const store::Deployment& d) const;
  net::ServerResponse PostResult(const RouteRequest& r, const store::Deployment& d) const;

  store::Store& store_;
  RunGatewayOptions options_;
  crypto::RunTokenVerifier tokens_;
  Clock& clock_;
  Router router_;
};

}  // namespace berth::server
