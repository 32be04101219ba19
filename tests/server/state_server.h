// berthd's runner-facing side for a test: SQLite in a folder, a run-token key, the state
// backend and the runner gateway on a loopback HTTP server, and tokens minted as berthd mints
// them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/time_format.h"
#include "crypto/jws.h"
#include "net/http_server.h"
#include "server/change_feed.h"
#include "server/gateway/run_gateway.h"
#include "server/statebackend/state_backend.h"
#include "store/store.h"

namespace berth::server {

class StateServer {
 public:
  static Result<std::unique_ptr<StateServer>> Start(const std::filesystem::path& dir) {
    std::unique_ptr<StateServer> server(new StateServer());
    auto store = store::OpenStore("sqlite:" + (dir / "berth.db").string(), 4);
    if (!store) return store.error();
    server->store_ = std::move(*store);
    auto signer = crypto::Ed25519Signer::Generate();
    if (!signer) return signer.error();
    server->signer_.emplace(std::move(*signer));
    server->backend_ = std::make_unique<StateBackend>(
        server->store_->States(), server->signer_->PublicKey(), SystemClock::Instance());
    server->gateway_ = std::make_unique<RunGateway>(
        *server->store_,
        RunGatewayOptions{.public_key = server->signer_->PublicKey(), .feed = &server->feed_});
    StateServer* raw = server.get();
    auto http = net::StartHttpServer({}, [raw](const net::ServerRequest& request) {
      return RunGateway::Serves(request.target) ? raw->gateway_->Handle(request)
                                                : raw->backend_->Handle(request);
    });
    if (!http) return http.error();
    server->http_ = std::move(*http);
    return server;
  }

  store::Store& Store() { return *store_; }
  ChangeFeed& Feed() { return feed_; }
  const crypto::Ed25519Signer& Signer() const { return *signer_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(http_->Port()); }
  std::string Token(const std::string& run, const std::string& scope, int64_t expires) const {
    return crypto::MintRunToken({run, std::string(crypto::kRunTokenAudience), UnixSecondsNow(),
                                 expires, "id-" + run, scope},
                                *signer_)
        .value();
  }

 private:
  StateServer() = default;
  std::unique_ptr<store::Store> store_;
  std::optional<crypto::Ed25519Signer> signer_;
  std::unique_ptr<StateBackend> backend_;
  ChangeFeed feed_;
  std::unique_ptr<RunGateway> gateway_;
  std::unique_ptr<net::HttpServer> http_;  // last: stopped first
};

}  // namespace berth::server
