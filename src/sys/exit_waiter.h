// Waiting until one of a set of processes exits, or another thread wakes the waiter, without
// polling: a pidfd per process (Linux 5.3) and an eventfd, in one poll(). A launcher that
// polled its runs every 20 ms made every short deployment wait 10 ms on average for nothing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>

#include "core/mutex.h"
#include "sys/fd.h"

namespace berth::sys {

class ExitWaiter {
 public:
  ExitWaiter();
  ExitWaiter(const ExitWaiter&) = delete;
  ExitWaiter& operator=(const ExitWaiter&) = delete;

  // From now on, pid's exit ends a Wait (at once if it has exited already), also a Wait that
  // began before, from another thread. A pid the kernel refuses a pidfd for (gone already, or
  // too old a kernel) is left to the Wait's timeout.
  void Watch(pid_t pid) EXCLUDES(mutex_);
  void Forget(pid_t pid) EXCLUDES(mutex_);
  // Ends the current or next Wait; from any thread.
  void Wake();
  // Until a watched process has exited, Wake, or timeout. A process that has exited keeps
  // ending every Wait at once until it is forgotten.
  void Wait(std::chrono::milliseconds timeout) EXCLUDES(mutex_);

 private:
  Fd wake_;
  Mutex mutex_;
  std::map<pid_t, Fd> watched_ GUARDED_BY(mutex_);
};

}  // namespace berth::sys
