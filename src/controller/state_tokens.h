// The tokens with which a runner Pod's tofu reaches its own object's state in berth-controller's
// state service (controller/state_service.h): an HMAC that binds the object's namespace, its
// name and an expiry, under a key every replica derives from the controller's CA key, so that
// no replica stores one and a token minted by one replica opens the state on any other.
#pragma once

#include <chrono>
#include <string>

namespace berth::controller {

class StateTokens {
 public:
  // key: secret bytes (RunnerPki::StateTokenKey()).
  explicit StateTokens(std::string key) : key_(std::move(key)) {}

  // "<expiry in Unix seconds>.<hex HMAC>"
  std::string Mint(const std::string& ns, const std::string& name,
                   std::chrono::system_clock::time_point expires) const;

  enum class Verdict { kValid, kExpired, kInvalid };
  // kInvalid as well for a token of another object: the HMAC binds both names.
  Verdict Verify(const std::string& token, const std::string& ns, const std::string& name,
                 std::chrono::system_clock::time_point now) const;

 private:
  std::string Mac(const std::string& ns, const std::string& name, const std::string& expiry) const;

  std::string key_;
};

}  // namespace berth::controller
