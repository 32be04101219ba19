// A deployment's result in its three lives (waiting for approval, ended, an approved apply
// ended) as the API shows it and as the store reads it back.
#include "core/deployment_result.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

using nlohmann::json;

RunEnd PlanRunEnd() {
  RunResult run{.op = "plan", .binary_name = "tofu", .binary_version = "1.9.0"};
  run.plan = PlanSummary{.hash = "sha256:ab", .keyed = true, .add = 2, .has_changes = true};
  return {.succeeded = true, .exit_code = 0, .run = run};
}

TEST(DeploymentResult, NoneIsNullAndReadsBackAsNone) {
  EXPECT_TRUE(DeploymentResultToJson({}).is_null());
  EXPECT_TRUE(DeploymentResultFromJson(nullptr).Empty());
  EXPECT_TRUE(DeploymentResultFromJson(json::array()).Empty());
}

TEST(DeploymentResult, AWaitingPlanShowsItsPlanVersionAndRunAndReadsBackWhole) {
  DeploymentResult waiting{
      .plan = PlanRunEnd().run->plan, .state_version = 7, .plan_run = PlanRunEnd()};
  const json shown = DeploymentResultToJson(waiting);
  EXPECT_EQ(shown["plan"]["hash"], "sha256:ab");
  EXPECT_EQ(shown["plan"]["add"], 2);
  EXPECT_EQ(shown["state_version"], 7);
  EXPECT_EQ(shown["plan_run"]["run"]["binary"]["name"], "tofu");
  EXPECT_FALSE(shown.contains("succeeded")) << "it has not ended";
  EXPECT_EQ(DeploymentResultFromJson(shown), waiting);
  EXPECT_EQ(DeploymentResultFromJson(shown).PlanHash(), "sha256:ab");
}

TEST(DeploymentResult, AnApprovedApplyKeepsThePlanItAppliedBesideItsEnd) {
  DeploymentResult ended{.end = RunEnd{.succeeded = false,
                                       .exit_code = 1,
                                       .error_kind = "Apply",
                                       .error_message = "the provider said no",
                                       .image_id = "runner@sha256:cd"},
                         .plan = PlanRunEnd().run->plan,
                         .plan_run = PlanRunEnd()};
  const json shown = DeploymentResultToJson(ended);
  EXPECT_EQ(shown["succeeded"], false);
  EXPECT_EQ(shown["error"], (json{{"kind", "Apply"}, {"message", "the provider said no"}}));
  EXPECT_EQ(shown["approved_plan"]["hash"], "sha256:ab");
  EXPECT_FALSE(shown.contains("plan")) << "an ended deployment's plan is the approved one";
  EXPECT_EQ(shown["image_id"], "runner@sha256:cd");
  EXPECT_EQ(DeploymentResultFromJson(shown), ended);
}

TEST(DeploymentResult, APlanWithoutASummaryIsShownEmptyAndWhatCannotBeReadIsLeftOut) {
  DeploymentResult waiting{.state_version = 3, .plan_run = RunEnd{.succeeded = true}};
  const json shown = DeploymentResultToJson(waiting);
  EXPECT_EQ(shown["plan"], json::object());
  EXPECT_EQ(DeploymentResultFromJson(shown), waiting);

  json hostile = {{"succeeded", true},
                  {"exit_code", "zero"},
                  {"run", {{"op", 7}}},
                  {"approved_plan", {{"hash", 1}}}};
  DeploymentResult read = DeploymentResultFromJson(hostile);
  ASSERT_TRUE(read.end);
  EXPECT_TRUE(read.end->succeeded);
  EXPECT_EQ(read.end->exit_code, -1);
  EXPECT_FALSE(read.end->run);
  EXPECT_FALSE(read.plan);
}

}  // namespace
}  // namespace berth
