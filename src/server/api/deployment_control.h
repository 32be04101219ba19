// What the API asks of the one owner of a deployment's state once it is queued (the
// dispatcher): to cancel it, whatever state it is in, and to approve its plan. The API itself
// only creates deployments.
#pragma once

#include <string>

#include "core/error.h"
#include "store/deployment_store.h"

namespace berth::server {

class DeploymentControl {
 public:
  virtual ~DeploymentControl() = default;
  // The deployment as it is after the request (cancelled, or still stopping); who is for the
  // record ("token t1").
  virtual Result<store::Deployment> Cancel(const std::string& org, const std::string& id,
                                           const std::string& who) = 0;
  virtual Result<store::Deployment> Approve(const std::string& org, const std::string& id,
                                            const std::string& plan_hash,
                                            const std::string& who) = 0;
};

}  // namespace berth::server
