// What a kept plan runner takes from the gateway's /next: a wait, or an apply run whose every
// field has the shape a run needs; anything else ends the wait (the answer reaches a Pod a
// hostile module shares, and a forged one must not steer the runner).
#include "runner/apply_handover.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace berth::runner {
namespace {

using nlohmann::json;

json Handover() {
  return {{"op", "apply"},
          {"run_id", "d-1-apply"},
          {"token", "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJkLTEtYXBwbHkifQ.c2ln"},
          {"approved_plan", "sha256:" + std::string(64, 'a')},
          {"approved_plan_sha256", std::string(64, 'b')}};
}

TEST(ApplyHandover, AWaitIsNoHandoverAndAHandoverIsTakenWhole) {
  auto wait = ParseApplyHandover(R"({"wait": true})");
  ASSERT_TRUE(wait) << wait.error().message;
  EXPECT_FALSE(*wait);
  auto handed = ParseApplyHandover(Handover().dump());
  ASSERT_TRUE(handed) << handed.error().message;
  ASSERT_TRUE(*handed);
  EXPECT_EQ((*handed)->op, "apply");
  EXPECT_EQ((*handed)->run_id, "d-1-apply");
  EXPECT_EQ((*handed)->approved_plan_sha256, std::string(64, 'b'));
}

TEST(ApplyHandover, AnswersOfAnyOtherShapeAreRefusedNamingTheField) {
  std::vector<std::pair<json, std::string>> forged = {
      {json::array(), "body"},
      {[] {
         json h = Handover();
         h["op"] = "plan";
         return h;
       }(),
       "op"},
      {[] {
         json h = Handover();
         h["run_id"] = "../../etc";
         return h;
       }(),
       "run_id"},
      {[] {
         json h = Handover();
         h.erase("token");
         return h;
       }(),
       "token"},
      {[] {
         json h = Handover();
         h["token"] = "a b\nc";
         return h;
       }(),
       "token"},
      {[] {
         json h = Handover();
         h["approved_plan"] = 7;
         return h;
       }(),
       "approved_plan"},
      {[] {
         json h = Handover();
         h["approved_plan_sha256"] = "--op=destroy";
         return h;
       }(),
       "approved_plan_sha256"},
  };
  for (const auto& [answer, field] : forged) {
    auto parsed = ParseApplyHandover(answer.dump());
    ASSERT_FALSE(parsed) << answer.dump();
    EXPECT_NE(parsed.error().message.find(field), std::string::npos) << parsed.error().message;
  }
  EXPECT_FALSE(ParseApplyHandover("{\"wait\": true"));     // cut short
  EXPECT_FALSE(ParseApplyHandover(std::string(64, '[')));  // deeper than any answer
}

// The apply continues the plan: in its work folder, prepared, with the handed run's identity;
// nothing of the plan's own (its wait, a destroy plan) carries over.
TEST(ApplyHandover, TheApplyRunsInThePlansWorkFolderAsTheHandedRun) {
  RunOptions plan;
  plan.op = "plan";
  plan.ns = "team";
  plan.name = "d-1";
  plan.run_id = "d-1";
  plan.gateway = "https://berthd";
  plan.plan_destroy = true;
  plan.await_apply = std::chrono::minutes(10);
  auto handed = ParseApplyHandover(Handover().dump());
  ASSERT_TRUE(handed && *handed);
  RunOptions apply = ContinuedApplyOptions(plan, **handed, "/tmp/t/token");
  EXPECT_EQ(apply.op, "apply");
  EXPECT_EQ(apply.run_id, "d-1-apply");
  EXPECT_EQ(apply.token_file, "/tmp/t/token");
  EXPECT_EQ(apply.workdir, "/tmp/team-d-1");
  EXPECT_TRUE(apply.prepared);
  EXPECT_TRUE(apply.allow_destroy);
  EXPECT_FALSE(apply.plan_destroy);
  EXPECT_EQ(apply.await_apply.count(), 0);
  EXPECT_EQ(apply.approved_plan, "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(apply.gateway, plan.gateway);
}

}  // namespace
}  // namespace berth::runner
