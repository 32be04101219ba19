// How every launcher reads a runner's end: its exit status and its result document, which a
// hostile module next to the runner may have shaped.
#include "launch/run_outcome.h"

#include <gtest/gtest.h>

#include <set>

namespace berth::launch {
namespace {

std::string Result(std::optional<RunError> error) {
  RunResult r;
  r.op = "apply";
  r.error = std::move(error);
  return RunResultToJson(r).dump();
}

TEST(RunOutcome, ASuccessNeedsANullErrorAndExitZero) {
  RunOutcome ok = OutcomeFromResult(0, Result(std::nullopt));
  EXPECT_TRUE(ok.succeeded);
  EXPECT_EQ(ok.FailureName(), "");
  ASSERT_TRUE(ok.result);
  EXPECT_EQ(ok.result->op, "apply");

  RunOutcome contradicted = OutcomeFromResult(1, Result(std::nullopt));
  EXPECT_FALSE(contradicted.succeeded);
  EXPECT_TRUE(contradicted.EndedAs(RunnerEnd::kFailed)) << contradicted.message;
}

TEST(RunOutcome, TheResultsErrorKindIsTheFailure) {
  RunOutcome failed =
      OutcomeFromResult(1, Result(RunError{RunErrorKind::kStateLocked, "plan", "held", 1, ""}));
  EXPECT_FALSE(failed.succeeded);
  EXPECT_EQ(failed.FailureName(), "StateLocked");
  EXPECT_EQ(failed.message, "held");
  EXPECT_FALSE(failed.Cancelled());

  RunOutcome cancelled =
      OutcomeFromResult(1, Result(RunError{RunErrorKind::kCancelled, "apply", "SIGTERM", 1, ""}));
  EXPECT_TRUE(cancelled.Cancelled());
}

// A kind that is not one of the result's, or a document that is no result, is no success and
// no made-up kind: the runner failed, and the message says its result was refused.
TEST(RunOutcome, AForgedOrBrokenResultIsARunnerFailure) {
  std::string forged = Result(RunError{RunErrorKind::kApply, "apply", "x", 1, ""});
  forged.replace(forged.find("\"Apply\""), 7, "\"Fine!\"");
  for (const std::string& text :
       {forged, std::string("{\"error\":null}"), std::string("{\"error\":null"), std::string()}) {
    RunOutcome outcome = OutcomeFromResult(0, text);
    EXPECT_FALSE(outcome.succeeded) << text;
    EXPECT_TRUE(outcome.EndedAs(RunnerEnd::kFailed)) << text;
    EXPECT_FALSE(outcome.result) << text;
  }
  EXPECT_NE(OutcomeFromResult(0, forged).message.find("$.error.kind"), std::string::npos);
  EXPECT_EQ(OutcomeFromResult(std::nullopt, "").message, "the runner ended without a result");
}

TEST(RunOutcome, EveryRunnerEndHasItsOwnName) {
  std::set<std::string_view> names;
  for (int e = 0; e <= static_cast<int>(RunnerEnd::kFailed); ++e)
    names.insert(RunnerEndName(static_cast<RunnerEnd>(e)));
  EXPECT_EQ(names.size(), static_cast<size_t>(RunnerEnd::kFailed) + 1);
}

}  // namespace
}  // namespace berth::launch
