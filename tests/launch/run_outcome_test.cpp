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

// What a launcher saw of a runner that exited with code and wrote text where it reads.
RunnerExit Exited(std::optional<int> code, std::string text) {
  return RunnerExit{.exit_code = code, .written_result = std::move(text)};
}

RunOutcome Written(std::optional<int> code, const std::string& text) {
  return JoinRunEnd(Exited(code, text), std::nullopt, "apply");
}

TEST(RunOutcome, ASuccessNeedsANullErrorAndExitZero) {
  RunOutcome ok = Written(0, Result(std::nullopt));
  EXPECT_TRUE(ok.succeeded);
  EXPECT_EQ(ok.FailureName(), "");
  ASSERT_TRUE(ok.result);
  EXPECT_EQ(ok.result->op, "apply");

  RunOutcome contradicted = Written(1, Result(std::nullopt));
  EXPECT_FALSE(contradicted.succeeded);
  EXPECT_TRUE(contradicted.EndedAs(RunnerEnd::kFailed)) << contradicted.message;
}

TEST(RunOutcome, TheResultsErrorKindIsTheFailure) {
  RunOutcome failed =
      Written(1, Result(RunError{RunErrorKind::kStateLocked, "plan", "held", 1, ""}));
  EXPECT_FALSE(failed.succeeded);
  EXPECT_EQ(failed.FailureName(), "StateLocked");
  EXPECT_EQ(failed.message, "held");
  EXPECT_FALSE(failed.Cancelled());

  RunOutcome cancelled =
      Written(1, Result(RunError{RunErrorKind::kCancelled, "apply", "SIGTERM", 1, ""}));
  EXPECT_TRUE(cancelled.Cancelled());
}

// A kind that is not one of the result's, or a document that is no result, is no success and
// no made-up kind: the runner failed, and the message says its result was refused.
TEST(RunOutcome, AForgedOrBrokenResultIsARunnerFailure) {
  std::string forged = Result(RunError{RunErrorKind::kApply, "apply", "x", 1, ""});
  forged.replace(forged.find("\"Apply\""), 7, "\"Fine!\"");
  for (const std::string& text :
       {forged, std::string("{\"error\":null}"), std::string("{\"error\":null"), std::string()}) {
    for (const RunOutcome& outcome : {Written(0, text), JoinRunEnd(Exited(0, ""), text, "apply")}) {
      EXPECT_FALSE(outcome.succeeded) << text;
      EXPECT_TRUE(outcome.EndedAs(RunnerEnd::kFailed)) << text;
      EXPECT_FALSE(outcome.result) << text;
    }
  }
  EXPECT_NE(Written(0, forged).message.find("$.error.kind"), std::string::npos);
  EXPECT_EQ(Written(std::nullopt, "").message, "the runner ended without a result");
}

// The result the runner posted is whole (a termination message is cut to fit): it is preferred,
// and what the runner wrote counts only when it posted none that is valid.
TEST(RunOutcome, ThePostedResultIsPreferredAndTheWrittenOneIsTheFallback) {
  const std::string failed = Result(RunError{RunErrorKind::kApply, "apply", "boom", 1, ""});
  const std::string ok = Result(std::nullopt);
  RunOutcome posted = JoinRunEnd(Exited(0, failed), ok, "apply");
  EXPECT_TRUE(posted.succeeded) << posted.message;

  RunOutcome fallback = JoinRunEnd(Exited(1, failed), std::nullopt, "apply");
  EXPECT_EQ(fallback.FailureName(), "Apply");
  RunOutcome junk_posted = JoinRunEnd(Exited(1, failed), "{not json", "apply");
  EXPECT_EQ(junk_posted.FailureName(), "Apply") << junk_posted.message;
}

// A result of another op is not this run's: a plan's result cannot end its apply (a kept
// plan runner that never took the apply up still holds the plan's in its termination message).
TEST(RunOutcome, AResultOfAnotherOpIsNotTheRuns) {
  RunResult plan;
  plan.op = "plan";
  const std::string plan_text = RunResultToJson(plan).dump();
  RunnerExit kept = Exited(0, plan_text);
  kept.message = "the plan's kept runner ended without taking up the apply";
  for (const RunOutcome& outcome :
       {JoinRunEnd(kept, std::nullopt, "apply"), JoinRunEnd(Exited(0, ""), plan_text, "apply")}) {
    EXPECT_FALSE(outcome.succeeded);
    EXPECT_TRUE(outcome.EndedAs(RunnerEnd::kFailed));
    EXPECT_FALSE(outcome.result);
    EXPECT_NE(outcome.message.find("it is a plan run's, not this apply run's"), std::string::npos)
        << outcome.message;
  }
  EXPECT_NE(JoinRunEnd(kept, std::nullopt, "apply").message.find("without taking up the apply"),
            std::string::npos);
  EXPECT_TRUE(JoinRunEnd(kept, std::nullopt, "plan").succeeded);
}

// How the launcher saw the runner end: OOMKilled, evicted, a limit, a cancel before it started
// stand whatever was posted; lost or failed (the launcher does not know how the run went) give
// way to a valid posted result; a runner asked to stop that left no result was cancelled.
TEST(RunOutcome, WhatTheLauncherSawStandsUnlessItDoesNotKnow) {
  const std::string ok = Result(std::nullopt);
  RunnerExit oom = RunnerStopped(RunnerEnd::kOomKilled, "out of memory");
  oom.exit_code = 137;
  oom.image_id = "sha256:abc";
  RunOutcome killed = JoinRunEnd(oom, ok, "apply");
  EXPECT_FALSE(killed.succeeded);
  EXPECT_EQ(killed.FailureName(), "OOMKilled");
  EXPECT_EQ(killed.message, "out of memory");
  EXPECT_EQ(killed.exit_code, 137);
  EXPECT_EQ(killed.image_id, "sha256:abc");

  for (RunnerEnd unknown : {RunnerEnd::kLost, RunnerEnd::kFailed}) {
    RunnerExit exit = RunnerStopped(unknown, "vanished");
    EXPECT_TRUE(JoinRunEnd(exit, ok, "apply").succeeded) << RunnerEndName(unknown);
    RunOutcome alone = JoinRunEnd(exit, std::nullopt, "apply");
    EXPECT_TRUE(alone.EndedAs(unknown));
    EXPECT_EQ(alone.message, "vanished");
  }

  RunnerExit stopped = Exited(143, "");
  stopped.stop_requested = true;
  EXPECT_TRUE(JoinRunEnd(stopped, std::nullopt, "apply").EndedAs(RunnerEnd::kCancelled));
  stopped.written_result = Result(RunError{RunErrorKind::kApply, "apply", "x", 1, ""});
  EXPECT_EQ(JoinRunEnd(stopped, std::nullopt, "apply").FailureName(), "Apply");

  // A launcher's note says why there is no result, after the join's own words.
  RunnerExit noted = Exited(1, "");
  noted.message = "Error";
  EXPECT_EQ(JoinRunEnd(noted, std::nullopt, "apply").message,
            "the runner exited 1 without a result (Error)");
}

TEST(RunOutcome, EveryRunnerEndHasItsOwnName) {
  std::set<std::string_view> names;
  for (int e = 0; e <= static_cast<int>(RunnerEnd::kFailed); ++e)
    names.insert(RunnerEndName(static_cast<RunnerEnd>(e)));
  EXPECT_EQ(names.size(), static_cast<size_t>(RunnerEnd::kFailed) + 1);
}

}  // namespace
}  // namespace berth::launch
