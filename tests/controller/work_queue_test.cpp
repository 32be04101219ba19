// The controller's work queue: a key waits once however often it is added, is never handed to
// two workers at once, comes back after its work when it was added meanwhile, can wait for
// later, and a shut-down queue releases every worker.
#include "controller/work_queue.h"

#include <gtest/gtest.h>

#include <future>

namespace berth::controller {
namespace {

TEST(WorkQueue, AKeyAddedTwiceWaitsOnce) {
  WorkQueue queue;
  queue.Add("ns/a");
  queue.Add("ns/b");
  queue.Add("ns/a");
  EXPECT_EQ(queue.Depth(), 2u);
  EXPECT_EQ(queue.Get(), "ns/a");
  EXPECT_EQ(queue.Get(), "ns/b");
}

TEST(WorkQueue, AKeyAddedWhileWorkedOnComesBackOnlyAfterItsWork) {
  WorkQueue queue;
  queue.Add("ns/a");
  ASSERT_EQ(queue.Get(), "ns/a");
  queue.Add("ns/a");  // changed while a worker reconciles it
  EXPECT_EQ(queue.Depth(), 0u) << "not handed to a second worker meanwhile";
  queue.Done("ns/a");
  EXPECT_EQ(queue.Depth(), 1u);
  EXPECT_EQ(queue.Get(), "ns/a");
  queue.Done("ns/a");
  EXPECT_EQ(queue.Depth(), 0u);
}

TEST(WorkQueue, AKeyForLaterComesAfterOnesReadyNow) {
  WorkQueue queue;
  queue.AddAfter("ns/later", std::chrono::milliseconds(30));
  queue.Add("ns/now");
  EXPECT_EQ(queue.Get(), "ns/now");
  EXPECT_EQ(queue.Get(), "ns/later");  // blocks until it is due
}

// Both workers sleep until the one key is due; the one that wakes second must not read the
// deadline of an entry the first has taken (the sanitizer build catches a use after free).
TEST(WorkQueue, TwoWorkersWaitingForOneKeyForLaterGetItOnce) {
  for (int round = 0; round < 20; ++round) {
    WorkQueue queue;
    queue.AddAfter("ns/later", std::chrono::milliseconds(20));
    auto first = std::async(std::launch::async, [&queue] { return queue.Get(); });
    auto second = std::async(std::launch::async, [&queue] { return queue.Get(); });
    while (first.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready &&
           second.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    }
    queue.ShutDown();  // releases the worker that got nothing
    std::optional<std::string> one = first.get(), other = second.get();
    EXPECT_NE(one.has_value(), other.has_value()) << "handed out once";
    EXPECT_EQ(one ? one : other, "ns/later");
  }
}

TEST(WorkQueue, ShutDownReleasesAWaitingWorker) {
  WorkQueue queue;
  auto worker = std::async(std::launch::async, [&queue] { return queue.Get(); });
  queue.ShutDown();
  EXPECT_EQ(worker.get(), std::nullopt);
  queue.Add("ns/a");
  EXPECT_EQ(queue.Depth(), 0u) << "nothing is taken after shutdown";
}

}  // namespace
}  // namespace berth::controller
