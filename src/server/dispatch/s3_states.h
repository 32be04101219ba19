// The s3 state storage's locks a dead run left (tofu's use_lockfile: KEY.tflock beside the
// state, holding TF's LockInfo). berthd reaches the bucket with credentials of its own, never a
// run's: the storage's role_arn, assumed at STS with an ID token berthd signs for the
// environment (sub org:ORG:project:PROJECT:env:ENV:phase:unlock, aud sts.amazonaws.com), good
// for fifteen minutes and kept nowhere. It deletes a lock only when the run holds it (its
// "Who" names the run's host) and only as it read it (If-Match its ETag).
#pragma once

#include <chrono>
#include <functional>

#include "core/clock.h"
#include "crypto/aws_sigv4.h"
#include "net/http_client.h"
#include "server/dispatch/left_state_locks.h"

namespace berth::server {

class S3StateLocks final : public LeftStateLocks {
 public:
  using SignIdToken = std::function<Result<std::string>(const nlohmann::json& claims,
                                                        std::chrono::seconds lifetime)>;
  S3StateLocks(net::HttpClient& http, SignIdToken sign, Clock& clock)
      : http_(http), sign_(std::move(sign)), clock_(clock) {}

  Result<std::optional<std::string>> BreakIfHeldBy(const StateStorage& storage,
                                                   const EnvironmentRef& env,
                                                   const std::string& run_id) override;

 private:
  Result<crypto::AwsCredentials> Credentials(const S3StateStorage& storage,
                                             const EnvironmentRef& env);

  net::HttpClient& http_;
  SignIdToken sign_;
  Clock& clock_;
};

}  // namespace berth::server
