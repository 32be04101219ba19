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
  std::thread killer([&] { child.Signal(SIGKILL); });
  waiter.Wait(kForever);
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
