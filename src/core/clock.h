// Time as a dependency: production code asks a Clock, tests move a ManualClock by hand (no
// sleeps in tests about time).
#pragma once

#include <chrono>

#include "core/mutex.h"

namespace berth {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  static SystemClock& Instance() {
    static SystemClock clock;
    return clock;
  }
};

class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override {
    MutexLock lock(mutex_);
    return now_;
  }
  void Advance(std::chrono::steady_clock::duration d) {
    MutexLock lock(mutex_);
    now_ += d;
  }

 private:
  Mutex mutex_;
  std::chrono::steady_clock::time_point now_ GUARDED_BY(mutex_){};
};

}  // namespace berth
