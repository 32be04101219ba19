// What berthd decides of a request once its headers are in, before it reads a byte of its body
// (net::ServerOptions::admit): the body's limit for its route, and, for a body over 64 KiB or
// of unknown size, whether its credential is one berthd knows for the surface it addresses. A
// caller without one is refused there, so no stranger makes berthd hold up to a state's or a
// bundle's 64 MiB per connection. What the credential may do is still the handler's to check,
// once the body is in.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "crypto/jws.h"
#include "net/http_server.h"

namespace berth::store {
class Store;
}

namespace berth::server {

// An API body 1 MiB (docs/api.md); a state (through the backend, or pushed by an operator), a
// plan or a module bundle 64 MiB.
size_t BodyLimit(std::string_view method, std::string_view target);

class RequestAdmission {
 public:
  RequestAdmission(store::Store& store, std::string run_token_public_key, Clock& clock)
      : store_(store), run_tokens_(std::move(run_token_public_key)), clock_(clock) {}
  // The run surfaces (state backend, run gateway) need a run token that verifies; the API
  // (/orgs/...) an API token or session that exists and has not expired; the agent gateway an
  // agent token its runner's key signed (whether it was used before is the gateway's to see,
  // once: they are single-use); no other surface takes such a body.
  net::Admission operator()(const net::ServerRequest& head) const;

 private:
  std::optional<net::ServerResponse> AdmitAgent(const net::ServerRequest& head,
                                                const std::string& path) const;

  store::Store& store_;
  crypto::RunTokenVerifier run_tokens_;
  Clock& clock_;
};

}  // namespace berth::server
