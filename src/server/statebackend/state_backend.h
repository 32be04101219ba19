// berthd's TF state backend: the Terraform/OpenTofu HTTP backend protocol (GET, POST, DELETE,
// LOCK, UNLOCK) at /state/v1/{org}/{project}/{env}, one state per environment, every version
// kept by the store. A request carries its run's token (as the Basic password, which tofu sends
// from TF_HTTP_PASSWORD, or as a Bearer token) and may touch only the environment the token's
// scope names, and only while its run goes on.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "crypto/jws.h"
#include "net/http_server.h"
#include "store/store.h"

namespace berth::server {

inline constexpr std::string_view kStatePathPrefix = "/state/v1/";

class StateBackend {
 public:
  // public_key: the run tokens' Ed25519 key (32 raw bytes); clock: what tokens expire by. The
  // store keeps the states, and says whether a token's run goes on (live_run.h).
  StateBackend(store::Store& store, std::string public_key, Clock& clock);
  static bool Serves(const std::string& target) { return target.starts_with(kStatePathPrefix); }
  net::ServerResponse Handle(const net::ServerRequest& request) const;

 private:
  store::Store& store_;
  store::StateStore& states_;
  crypto::RunTokenVerifier tokens_;
  Clock& clock_;
};

}  // namespace berth::server
