// Time as a dependency: production code asks a Clock, tests move a ManualClock by hand (no
// sleeps in tests about time).
#pragma once

#include <chrono>
#include <cstdint>

#include "core/mutex.h"

namespace berth {

class Clock {
 public:
  virtual ~Clock() = default;
  // For intervals and deadlines within this process.
  virtual std::chrono::steady_clock::time_point Now() = 0;
  // For times shared with others (the database's timestamps, a token's expiry).
  virtual std::chrono::system_clock::time_point Wall() = 0;
  int64_t WallMillis() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Wall().time_since_epoch()).count();
  }
  int64_t WallSeconds() { return WallMillis() / 1000; }
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point Wall() override { return std::chrono::system_clock::now(); }
  // Never destroyed: threads that outlive main() (a test's shared cluster) may still ask it.
  static SystemClock& Instance() {
    static auto* clock = new SystemClock();
    return *clock;
  }
};

// Moved only by Advance; its wall time starts at the real one (what it is compared with, such
// as the database's timestamps, is real) and moves with it.
class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override {
    MutexLock lock(mutex_);
    return now_;
  }
  std::chrono::system_clock::time_point Wall() override {
    MutexLock lock(mutex_);
    return wall_;
  }
  void Advance(std::chrono::steady_clock::duration d) {
    MutexLock lock(mutex_);
    now_ += d;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }

 private:
  Mutex mutex_;
  std::chrono::steady_clock::time_point now_ GUARDED_BY(mutex_){};
  std::chrono::system_clock::time_point wall_ GUARDED_BY(mutex_){std::chrono::system_clock::now()};
};

}  // namespace berth
