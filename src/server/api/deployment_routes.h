// The API's deployment routes (docs/api.md, "Deployments"): bundles, deployments of an
// environment (queue, list, read, cancel, approve), their logs (whole, or followed live) and
// their outputs (sensitive values only when asked for by name of the query).
#pragma once

#include <memory>

#include "server/api/api.h"
#include "server/api/follower_slots.h"
#include "server/api/request_support.h"

namespace berth::server {

class DeploymentRoutes {
 public:
  DeploymentRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                   DeploymentControl& control, const ApiOptions& options);

 private:
  net::ServerResponse UploadBundle(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Create(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse List(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Get(const RouteRequest& r, const Caller& c) const;
  // What a queued deployment waits for: the deployment holding its environment, else the one
  // queued before it ({id, state}); null when it is next.
  Result<nlohmann::json> DeploymentAhead(const store::Deployment& queued) const;
  net::ServerResponse Cancel(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Approve(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Logs(const RouteRequest& r, const Caller& c) const;
  // The log as stored, chunk by chunk (an encrypted chunk is one age file): for
  // `berth logs --raw`.
  net::ServerResponse LogChunks(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Outputs(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Artifact(const RouteRequest& r, const Caller& c) const;
  net::ServerResponse Changes(const RouteRequest& r, const Caller& c) const;

  store::Store& store_;
  const TokenGuard& authorized_;
  DeploymentControl& control_;
  const ApiOptions options_;
  std::unique_ptr<FollowerSlots> followers_;
};

}  // namespace berth::server
