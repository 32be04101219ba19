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
#include "server/live_run.h"
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
    server->backend_ = std::make_unique<StateBackend>(*server->store_, server->signer_->PublicKey(),
                                                      SystemClock::Instance());
    server->oidc_ = std::make_unique<OidcIssuer>(*server->store_, SystemClock::Instance(),
                                                 OidcIssuerOptions{.issuer = kIssuer});
    server->gateway_ = std::make_unique<RunGateway>(
        *server->store_, RunGatewayOptions{.public_key = server->signer_->PublicKey(),
                                           .signer = &*server->signer_,
                                           .feed = &server->feed_,
                                           .issuer = server->oidc_.get()});
    StateServer* raw = server.get();
    auto http = net::StartHttpServer({}, [raw](const net::ServerRequest& request) {
      return RunGateway::Serves(request.target) ? raw->gateway_->Handle(request)
                                                : raw->backend_->Handle(request);
    });
    if (!http) return http.error();
    server->http_ = std::move(*http);
    return server;
  }

  static constexpr char kIssuer[] = "https://berth.test";
  store::Store& Store() { return *store_; }
  OidcIssuer& Oidc() { return *oidc_; }
  ChangeFeed& Feed() { return feed_; }
  const crypto::Ed25519Signer& Signer() const { return *signer_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(http_->Port()); }
  // Environment acme/web/dev, and a deployment of it whose run is dispatched: the run's token
  // opens the gateway and the state backend until the deployment ends (EndRun).
  Result<void> DispatchRun(const std::string& deployment, const std::string& run) {
    store::Store& store = *store_;
    auto org = store.CreateOrganization("acme");
    if (!org) return org.error();
    if (*org) {  // the first run: its environment too
      store::Record env{
          .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "dev"};
      env.columns = {{"env_type_id", "development"}, {"runner_id", std::nullopt}};
      for (const store::Record& record :
           {store::Record{.kind = store::Kind::kProject, .org_id = "acme", .id = "web"},
            store::Record{.kind = store::Kind::kEnvType, .org_id = "acme", .id = "development"},
            env}) {
        if (auto made = store.Create(record); !made) return made.error();
      }
    }
    if (auto made = CreateDeployment(deployment); !made) return made;
    auto dispatched =
        store.Deployments().Transition("acme", deployment, DeploymentState::kQueued,
                                       DeploymentState::kDispatched, "", {.run_id = run});
    if (!dispatched) return dispatched.error();
    return {};
  }
  // The deployment's run ends, as the dispatcher ends it: failed, and its token retired.
  Result<void> EndRun(const std::string& deployment) {
    auto ended = store_->Deployments().Transition("acme", deployment, DeploymentState::kDispatched,
                                                  DeploymentState::kFailed, "the run ended", {});
    if (!ended) return ended.error();
    return MarkRunEnded(*store_, *ended, ended->run_id);
  }

  std::string Token(const std::string& run, const std::string& scope, int64_t expires) const {
    return crypto::MintRunToken({run, std::string(crypto::kRunTokenAudience), UnixSecondsNow(),
                                 expires, "id-" + run, scope},
                                *signer_)
        .value();
  }

 private:
  StateServer() = default;
  Result<void> CreateDeployment(const std::string& id) {
    store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = id};
    d.spec = {.op = DeploymentOp::kApply, .source_path = "/nowhere"};
    auto made = store_->Deployments().Create(d);
    if (!made) return made.error();
    return {};
  }
  std::unique_ptr<store::Store> store_;
  std::optional<crypto::Ed25519Signer> signer_;
  std::unique_ptr<StateBackend> backend_;
  std::unique_ptr<OidcIssuer> oidc_;  // before the gateway, which signs with it
  ChangeFeed feed_;
  std::unique_ptr<RunGateway> gateway_;
  std::unique_ptr<net::HttpServer> http_;  // last: stopped first
};

}  // namespace berth::server
