// The state service (controller/state_service.h) on an HTTPS listener of its own, with a
// certificate of the controller's CA for the host runner Pods reach it by: berth-controller's
// --state-address, --state-port and --state-host.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "controller/runner_pki.h"
#include "controller/state_service.h"
#include "controller/state_tokens.h"
#include "core/clock.h"
#include "kube/kube_api.h"
#include "net/http_server.h"
#include "sys/files.h"

namespace berth::controller {

struct StateServerOptions {
  std::string address = "0.0.0.0";  // where it listens
  int port = 9443;                  // 0: any free one
  std::string host;                 // what runner Pods reach it by: a DNS name or an IP address
};

class StateServer {
 public:
  static Result<std::unique_ptr<StateServer>> Start(kube::KubeApi& api, RunnerPki& pki,
                                                    Clock& clock,
                                                    const StateServerOptions& options);
  ~StateServer();
  StateServer(const StateServer&) = delete;
  StateServer& operator=(const StateServer&) = delete;

  // What the reconciler tells runner Pods: https://HOST:PORT, the CA, the tokens.
  StateEndpoint Endpoint() const;
  int Port() const { return server_->Port(); }

 private:
  StateServer(kube::KubeApi& api, Clock& clock, std::string key, std::string ca_pem,
              std::string host)
      : tokens_(std::move(key)),
        service_(api, tokens_, clock),
        ca_pem_(std::move(ca_pem)),
        host_(std::move(host)) {}

  const StateTokens tokens_;
  const StateService service_;
  const std::string ca_pem_;
  const std::string host_;
  std::optional<sys::TempDir> files_;  // the listener's certificate and key
  std::unique_ptr<net::HttpServer> server_;
};

}  // namespace berth::controller
