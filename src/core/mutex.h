// A mutex that clang's thread-safety analysis understands (libstdc++'s std::mutex carries no
// capability annotations), and its scoped lock.
#pragma once

#include <mutex>

#include "core/thread_annotations.h"

namespace berth {

class CAPABILITY("mutex") Mutex {
 public:
  // Lower-case names make it a BasicLockable (std::condition_variable_any waits on it).
  void lock() ACQUIRE() { m_.lock(); }      // NOLINT(readability-identifier-naming)
  void unlock() RELEASE() { m_.unlock(); }  // NOLINT(readability-identifier-naming)

 private:
  std::mutex m_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

}  // namespace berth
