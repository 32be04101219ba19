// Buckets refill continuously; a full bucket is the same as no bucket, so full ones are
// dropped when the map grows.
#include "server/api/rate_limiter.h"

namespace berth::server {

std::optional<std::chrono::seconds> RateLimiter::Take(const std::string& key) {
  if (rate_ <= 0) return std::nullopt;
  auto now = clock_.Now();
  MutexLock lock(mutex_);
  if (buckets_.size() >= kMaxKeys) {
    std::erase_if(buckets_, [&](const auto& entry) { return entry.second.FullAt(now); });
  }
  auto it = buckets_.try_emplace(key, rate_, burst_, now).first;
  auto wait = it->second.TryTake(now);
  if (wait == std::chrono::nanoseconds::zero()) return std::nullopt;
  return std::chrono::ceil<std::chrono::seconds>(wait);
}

}  // namespace berth::server
