#include "sys/exit_waiter.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace berth::sys {

ExitWaiter::ExitWaiter() : wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void ExitWaiter::Watch(pid_t pid) {
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return;
  {
    MutexLock lock(mutex_);
    watched_[pid] = std::move(pidfd);
  }
  Wake();  // a Wait already in poll() does not have this pidfd: it starts again with it
}

void ExitWaiter::Forget(pid_t pid) {
  MutexLock lock(mutex_);
  watched_.erase(pid);
}

void ExitWaiter::Wake() {
  uint64_t one = 1;
  (void)!write(wake_.Get(), &one, sizeof one);
}

void ExitWaiter::Wait(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds{{.fd = wake_.Get(), .events = POLLIN, .revents = 0}};
  {
    MutexLock lock(mutex_);
    for (const auto& [pid, pidfd] : watched_)
      fds.push_back({.fd = pidfd.Get(), .events = POLLIN, .revents = 0});
  }
  // The pidfds stay open while polled: only this thread forgets them (the launcher's loop).
  (void)poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  uint64_t count = 0;
  if (fds[0].revents & POLLIN) (void)!read(wake_.Get(), &count, sizeof count);
}

}  // namespace berth::sys
