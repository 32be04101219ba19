// The error table: every kind has one row, names round-trip, and the statuses and exit codes
// are the ones docs/api.md and docs/cli.md promise.
#include "core/error.h"

#include <gtest/gtest.h>

#include "core/exit_codes.h"

namespace berth {
namespace {

TEST(ErrorTable, EveryKindHasItsOwnRowAndItsNameRoundTrips) {
  for (int k = 0; k <= static_cast<int>(ErrorKind::kInternal); ++k) {
    auto kind = static_cast<ErrorKind>(k);
    EXPECT_EQ(Describe(kind).kind, kind) << k;
    EXPECT_EQ(ParseErrorKind(ErrorKindName(kind)), kind) << k;
  }
  EXPECT_FALSE(ParseErrorKind("Nope"));
}

TEST(ErrorTable, StatusesAndExitCodesAreThePromisedOnes) {
  EXPECT_EQ(HttpStatus(ErrorKind::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatus(ErrorKind::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatus(ErrorKind::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatus(ErrorKind::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatus(ErrorKind::kResourceExhausted), 429);
  EXPECT_EQ(Describe(ErrorKind::kNotFound).cli_exit, exit_code::kCliNotFound);
  EXPECT_EQ(Describe(ErrorKind::kConflict).cli_exit, exit_code::kCliConflict);
  EXPECT_EQ(Describe(ErrorKind::kInternal).cli_exit, exit_code::kCliUnavailable);
  EXPECT_EQ(Describe(ErrorKind::kPermissionDenied).cli_exit, exit_code::kCliRefused);
}

TEST(ErrorTable, AStatusWithoutAKindMeansWhatTheCliAlwaysSaid) {
  EXPECT_EQ(ErrorKindForStatus(404), ErrorKind::kNotFound);
  EXPECT_EQ(ErrorKindForStatus(412), ErrorKind::kConflict);
  EXPECT_EQ(ErrorKindForStatus(502), ErrorKind::kUnavailable);
  EXPECT_EQ(ErrorKindForStatus(413), ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace berth
