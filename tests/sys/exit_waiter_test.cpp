// A wait that only an exit or a wake can end: each test waits for an hour, so a waiter that
// missed the event would hang the test until ctest's timeout fails it.
#include "sys/exit_waiter.h"

#include <gtest/gtest.h>

#include <thread>

#include "sys/subprocess.h"

namespace berth::sys {
namespace {

constexpr std::chrono::hours kForever{1};

Subprocess Sleeper() {
  auto child = Subprocess::Spawn({.argv = {"/bin/sleep", "3600"}});
  EXPECT_TRUE(child) << child.error().ToString();
  return std::move(*child);
}

TEST(ExitWaiter, AWatchedProcessThatExitsEndsTheWait) {
  ExitWaiter waiter;
  Subprocess child = Sleeper();
  waiter.Watch(child.Pid());
  waiter.Wait(kForever);  // the watch's own wake (it refreshes a wait in progress)
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // into the wait first
    child.Signal(SIGKILL);
  });
  waiter.Wait(kForever);  // only the exit can end this one
  killer.join();
  EXPECT_TRUE(child.TryWait().has_value()) << "the wait ended before the process did";
}

TEST(ExitWaiter, AProcessThatExitedAlreadyEndsTheWaitAtOnce) {
  ExitWaiter waiter;
  auto child = Subprocess::Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child);
  waiter.Watch(child->Pid());
  waiter.Wait(kForever);
  EXPECT_EQ(child->Wait(), 0);
}

// The launcher's loop waits while another thread starts a run: that run's exit must not wait
// for the loop's next timeout.
TEST(ExitWaiter, AProcessWatchedDuringAWaitIsWaitedFor) {
  ExitWaiter waiter;
  Subprocess child = Sleeper();
  std::thread loop([&] {
    waiter.Wait(kForever);  // ends when the new pidfd is taken in
    waiter.Wait(kForever);  // ends at the exit
  });
  // Time for the loop to be in poll() without the new pidfd (no assertion hangs on it: a
  // waiter that missed the watch hangs the test instead).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  waiter.Watch(child.Pid());
  child.Signal(SIGKILL);
  loop.join();
  EXPECT_TRUE(child.TryWait().has_value());
}

TEST(ExitWaiter, AWakeFromAnotherThreadEndsTheWaitAndIsNotLostBeforeIt) {
  ExitWaiter waiter;
  Subprocess child = Sleeper();
  waiter.Watch(child.Pid());
  waiter.Wake();  // before the wait: kept for it
  waiter.Wait(kForever);
  std::thread waker([&] { waiter.Wake(); });
  waiter.Wait(kForever);
  waker.join();
  EXPECT_FALSE(child.TryWait().has_value()) << "the sleeper is still running";
  child.Signal(SIGKILL);
  child.Wait();
}

}  // namespace
}  // namespace berth::sys
