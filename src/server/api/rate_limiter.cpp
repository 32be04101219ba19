// Buckets refill continuously; a full bucket is the same as no bucket, so full ones are
// dropped when the map grows.
#include "server/api/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace berth::server {

std::optional<std::chrono::seconds> RateLimiter::Take(const std::string& key) {
  if (rate_ <= 0) return std::nullopt;
  auto now = clock_.Now();
  MutexLock lock(mutex_);
  if (buckets_.size() >= kMaxKeys) {
    std::erase_if(buckets_, [&](const auto& entry) {
      double idle = std::chrono::duration<double>(now - entry.second.at).count();
      return entry.second.tokens + idle * rate_ >= burst_;
    });
  }
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) {
    double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(burst_, b.tokens + elapsed * rate_);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  return std::chrono::seconds(static_cast<int64_t>(std::ceil((1 - b.tokens) / rate_)));
}

}  // namespace berth::server
