// A token bucket per key (an API token): `rate` requests a second on average, bursts up to
// `burst`. Beyond it the API answers 429 with Retry-After. Held in memory per berthd process.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/token_bucket.h"

namespace berth::server {

class RateLimiter {
 public:
  // rate <= 0 turns limiting off.
  RateLimiter(double rate, double burst, Clock& clock)
      : rate_(rate), burst_(burst), clock_(clock) {}

  // nullopt: allowed; else how long until a request would be.
  std::optional<std::chrono::seconds> Take(const std::string& key) EXCLUDES(mutex_);

 private:
  static constexpr size_t kMaxKeys = 10000;  // forget the idle beyond this, not limit them

  double rate_, burst_;
  Clock& clock_;
  Mutex mutex_;
  std::map<std::string, TokenBucket> buckets_ GUARDED_BY(mutex_);
};

}  // namespace berth::server
