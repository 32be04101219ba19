// berth-controller's state backend (docs/controller.md, "State"): tofu's HTTP backend in a
// runner Pod keeps its object's state here, with a token that opens that object's state only
// (controller/state_tokens.h), and the controller keeps it where tofu's kubernetes backend
// would: the Secret tfstate-default-<name> beside the object (gzip, key tfstate), locked by the
// Lease lock-tfstate-default-<name>. So runner Pods hold no Secret rights, states written by
// the kubernetes backend before stay where they are, and either can lock out the other.
#pragma once

#include <chrono>
#include <string>

#include "controller/state_tokens.h"
#include "core/clock.h"
#include "kube/kube_api.h"
#include "net/http_server.h"

namespace berth::controller {

// The path of an object's state under the service's URL.
std::string StatePath(const std::string& ns, const std::string& name);
// The Secret and the Lease that hold it.
std::string StateSecretName(const std::string& name);
std::string StateLeaseName(const std::string& name);

// The service as the reconciler tells a runner Pod of it: where the Pod of an object that names
// no backend of its own keeps the object's state.
struct StateEndpoint {
  std::string url;     // https://HOST:PORT, as runner Pods reach it
  std::string ca_pem;  // the CA its certificate is signed by (the controller's)
  const StateTokens* tokens = nullptr;
  // A token opens its object's state this long: longer than any run, short enough that one a
  // module copied out is soon worth nothing.
  std::chrono::seconds token_life{std::chrono::hours(24)};
};

struct StateServiceOptions {
  size_t max_state_bytes = size_t{32} << 20;  // a state, uncompressed
  std::string field_manager = "berth-controller";
};

class StateService {
 public:
  StateService(kube::KubeApi& api, const StateTokens& tokens, Clock& clock,
               StateServiceOptions options = {})
      : api_(api), tokens_(tokens), clock_(clock), options_(std::move(options)) {}

  // Before a body is read: a request without a token for the state it names is refused.
  net::Admission Admit(const net::ServerRequest& head) const;
  net::ServerResponse Handle(const net::ServerRequest& request) const;

 private:
  net::ServerResponse Read(const std::string& ns, const std::string& name) const;
  net::ServerResponse Write(const std::string& ns, const std::string& name,
                            const std::string& lock_id, const std::string& state) const;
  net::ServerResponse Lock(const std::string& ns, const std::string& name,
                           const std::string& info) const;
  net::ServerResponse Unlock(const std::string& ns, const std::string& name,
                             const std::string& info) const;

  kube::KubeApi& api_;
  const StateTokens& tokens_;
  Clock& clock_;
  const StateServiceOptions options_;
};

}  // namespace berth::controller
