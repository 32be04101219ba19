// The s3 state storage as berthd reaches it: to delete the lock a dead run left (tofu's
// use_lockfile: KEY.tflock beside the state, holding TF's LockInfo), and for an operator's
// `berth state show` and `unlock`. berthd reaches the bucket with credentials of its own, never
// a run's: the storage's role_arn, assumed at STS with an ID token berthd signs for the
// environment (sub org:ORG:project:PROJECT:env:ENV:phase:unlock, aud sts.amazonaws.com), good
// for fifteen minutes and kept nowhere. A lock is deleted only as it was read (If-Match its
// ETag); a dead run's only when its "Who" names the run's host.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "crypto/aws_sigv4.h"
#include "net/http_client.h"
#include "server/dispatch/left_state_locks.h"
#include "server/dispatch/states_elsewhere.h"

namespace berth::server {

class S3States final : public LeftStateLocks, public StatesElsewhere {
 public:
  using SignIdToken = std::function<Result<std::string>(const nlohmann::json& claims,
                                                        std::chrono::seconds lifetime)>;
  S3States(net::HttpClient& http, SignIdToken sign, Clock& clock)
      : http_(http), sign_(std::move(sign)), clock_(clock) {}

  Result<std::optional<std::string>> BreakIfHeldBy(const StateStorage& storage,
                                                   const EnvironmentRef& env,
                                                   const std::string& run_id) override;
  Result<ElsewhereState> Show(const StateStorage& storage, const EnvironmentRef& env) override;
  Result<ElsewhereLock> Unlock(const StateStorage& storage, const EnvironmentRef& env) override;

 private:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  // The lock object as read: TF's LockInfo (null when it is not JSON) and its ETag.
  struct ReadLock {
    nlohmann::json info;
    std::string etag;
  };
  // A signed request for key in storage's bucket, with berthd's credentials for env.
  class Session;

  Result<crypto::AwsCredentials> Credentials(const S3StateStorage& storage,
                                             const EnvironmentRef& env);
  // A session on storage's bucket with berthd's credentials for env.
  Result<Session> Open(const S3StateStorage& storage, const EnvironmentRef& env);
  Result<std::optional<ReadLock>> LockOf(Session& session, const std::string& key);
  Result<void> DeleteAsRead(Session& session, const std::string& key, const ReadLock& lock);

  net::HttpClient& http_;
  SignIdToken sign_;
  Clock& clock_;
};

}  // namespace berth::server
