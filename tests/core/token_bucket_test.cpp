// The token bucket: bursts up to its size, refills at its rate, and Reserve's debt makes the
// next callers wait their turn.
#include "core/token_bucket.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucket, AllowsABurstThenSaysHowLongUntilTheNextToken) {
  TokenBucket::TimePoint start{};
  TokenBucket bucket(10, 2, start);
  EXPECT_EQ(bucket.TryTake(start).count(), 0);
  EXPECT_EQ(bucket.TryTake(start).count(), 0);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.TryTake(start)), milliseconds(100));
  EXPECT_EQ(bucket.TryTake(start + milliseconds(100)).count(), 0);
  EXPECT_FALSE(bucket.FullAt(start + milliseconds(100)));
  EXPECT_TRUE(bucket.FullAt(start + milliseconds(300)));
}

TEST(TokenBucket, ReserveQueuesCallersBehindEachOther) {
  TokenBucket::TimePoint start{};
  TokenBucket bucket(10, 1, start);
  EXPECT_EQ(bucket.Reserve(start).count(), 0);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.Reserve(start)), milliseconds(100));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(bucket.Reserve(start)), milliseconds(200));
  // Nobody may take a token that is promised.
  EXPECT_GT(bucket.TryTake(start + milliseconds(150)).count(), 0);
}

}  // namespace
}  // namespace berth
