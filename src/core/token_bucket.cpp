#include "core/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace berth {

void TokenBucket::Refill(TimePoint now) {
  if (now <= at_) return;
  double elapsed = std::chrono::duration<double>(now - at_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
  at_ = now;
}

std::chrono::nanoseconds TokenBucket::TimeUntilOne() const {
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil((1 - tokens_) / rate_ * 1e9)));
}

std::chrono::nanoseconds TokenBucket::TryTake(TimePoint now) {
  Refill(now);
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return std::chrono::nanoseconds::zero();
  }
  return TimeUntilOne();
}

std::chrono::nanoseconds TokenBucket::Reserve(TimePoint now) {
  Refill(now);
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds::zero();
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(-tokens_ / rate_ * 1e9)));
}

bool TokenBucket::FullAt(TimePoint now) const {
  double elapsed = std::chrono::duration<double>(now - at_).count();
  return tokens_ + elapsed * rate_ >= burst_;
}

}  // namespace berth
