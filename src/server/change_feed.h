// Wakes whoever waits for a kind of change instead of leaving them to their next poll. berthd
// keeps two: one for the dispatcher (a deployment was queued, a run ended and freed its
// environment) and one for log followers (a chunk arrived, a run ended), so that log traffic
// never wakes the dispatcher. One counter per feed: a waiter woken by another deployment's
// change finds nothing new and waits again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/mutex.h"

namespace berth::server {

class ChangeFeed {
 public:
  uint64_t Generation() const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return generation_;
  }
  void Notify() EXCLUDES(mutex_) {
    std::vector<std::function<void()>> woken;
    {
      MutexLock lock(mutex_);
      ++generation_;
      woken.swap(subscribers_);
    }
    changed_.notify_all();
    for (const auto& wake : woken) wake();
  }
  // Until the generation moves past seen, or timeout.
  void WaitPast(uint64_t seen, std::chrono::milliseconds timeout) const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return generation_ != seen; });
  }
  // Forgets the wakes waiting without calling them: what serves them has stopped, and they
  // must go before what they hold (the server's executor) does.
  void DropWaiters() EXCLUDES(mutex_) {
    std::vector<std::function<void()>> dropped;
    {
      MutexLock lock(mutex_);
      dropped.swap(subscribers_);
    }
  }
  // Calls wake once, on the notifying thread (or this one, if it moved past seen already), when
  // the generation moves past seen: a waiter that holds no thread while it waits. wake must be
  // quick and must not call back into the feed.
  void OnChangePast(uint64_t seen, std::function<void()> wake) EXCLUDES(mutex_) {
    {
      MutexLock lock(mutex_);
      if (generation_ == seen) {
        subscribers_.push_back(std::move(wake));
        return;
      }
    }
    wake();
  }

 private:
  mutable Mutex mutex_;
  mutable std::condition_variable_any changed_;
  uint64_t generation_ GUARDED_BY(mutex_) = 0;
  std::vector<std::function<void()>> subscribers_ GUARDED_BY(mutex_);
};

}  // namespace berth::server
