// Wakes the readers that follow deployment logs when a chunk arrives, so a follower sees a
// line as soon as it is stored instead of at its next poll. One counter for every log: a
// follower woken for another deployment's chunk reads nothing new and waits again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>

#include "core/mutex.h"

namespace berth::server {

class LogFeed {
 public:
  uint64_t Generation() const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return generation_;
  }
  void Notify() EXCLUDES(mutex_) {
    {
      MutexLock lock(mutex_);
      ++generation_;
    }
    changed_.notify_all();
  }
  // Until the generation moves past seen, or timeout.
  void WaitPast(uint64_t seen, std::chrono::milliseconds timeout) const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return generation_ != seen; });
  }

 private:
  mutable Mutex mutex_;
  mutable std::condition_variable_any changed_;
  uint64_t generation_ GUARDED_BY(mutex_) = 0;
};

}  // namespace berth::server
