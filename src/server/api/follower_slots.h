// Log followers open at once, per API token and in total. A waiting follower holds no thread
// (net/http_server.h), but each holds a connection and a little memory: a client that opened
// them without end would still crowd others out. Beyond either cap, a follow is refused (429).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/mutex.h"

namespace berth::server {

class FollowerSlots {
 public:
  FollowerSlots(int per_token, int total) : per_token_(per_token), total_(total) {}

  // Held while a follow lasts; its place is given back when the last copy goes.
  using Slot = std::shared_ptr<void>;
  // A place for one more follower of token_id; null when a cap is reached.
  Slot Take(const std::string& token_id) EXCLUDES(mutex_);

  int PerToken() const { return per_token_; }
  int Total() const { return total_; }

 private:
  const int per_token_, total_;
  Mutex mutex_;
  int open_ GUARDED_BY(mutex_) = 0;
  std::map<std::string, int> by_token_ GUARDED_BY(mutex_);
};

}  // namespace berth::server
