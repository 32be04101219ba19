// A token bucket: `rate` tokens a second on average, at most `burst` saved up. The API's
// per-token rate limit refuses beyond it; the Kubernetes client waits instead.
#pragma once

#include <chrono>

namespace berth {

class TokenBucket {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Starts full. rate must be > 0.
  TokenBucket(double rate, double burst, TimePoint now)
      : rate_(rate), burst_(burst), tokens_(burst), at_(now) {}

  // Takes a token if one is there (zero); else takes none and says how long until one is.
  std::chrono::nanoseconds TryTake(TimePoint now);
  // Takes a token now or on credit: how long the caller must wait before using it.
  std::chrono::nanoseconds Reserve(TimePoint now);
  // A bucket that is full by now behaves as a new one (callers may forget it).
  bool FullAt(TimePoint now) const;

 private:
  void Refill(TimePoint now);
  std::chrono::nanoseconds TimeUntilOne() const;

  double rate_, burst_;
  double tokens_;  // may go negative through Reserve
  TimePoint at_;
};

}  // namespace berth
