#include "server/api/follower_slots.h"

namespace berth::server {

FollowerSlots::Slot FollowerSlots::Take(const std::string& token_id) {
  MutexLock lock(mutex_);
  int& of_token = by_token_[token_id];
  if (open_ >= total_ || of_token >= per_token_) {
    if (of_token == 0) by_token_.erase(token_id);
    return nullptr;
  }
  ++open_;
  ++of_token;
  return Slot(static_cast<void*>(this), [this, token_id](void*) {
    MutexLock giving_back(mutex_);
    --open_;
    if (--by_token_[token_id] == 0) by_token_.erase(token_id);
  });
}

}  // namespace berth::server
