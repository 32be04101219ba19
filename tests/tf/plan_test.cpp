// Reading plans: counts by action, the effect hash, destructive addresses and drift.
#include "tf/plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace berth::tf {
namespace {

using nlohmann::json;

json Change(const std::string& address, std::vector<std::string> actions, json before = nullptr,
            json after = nullptr) {
  return {{"address", address},
          {"change", {{"actions", actions}, {"before", before}, {"after", after}}}};
}

std::string Plan(std::vector<json> changes) {
  return json{{"format_version", "1.2"}, {"resource_changes", changes}}.dump();
}

TEST(Plan, CountsEachKindOfAction) {
  json imported = Change("a.imported", {"no-op"});
  imported["change"]["importing"] = {{"id", "x"}};
  auto analysis =
      AnalysePlan(Plan({Change("a.new", {"create"}), Change("a.changed", {"update"}),
                        Change("a.gone", {"delete"}), Change("a.swapped", {"delete", "create"}),
                        Change("a.swapped2", {"create", "delete"}), Change("a.same", {"no-op"}),
                        Change("data.x", {"read"}), imported}),
                  "");
  ASSERT_TRUE(analysis) << analysis.error().message;
  const auto& s = analysis->summary;
  EXPECT_EQ(s.add, 1);
  EXPECT_EQ(s.change, 1);
  EXPECT_EQ(s.destroy, 1);
  EXPECT_EQ(s.replace, 2);
  EXPECT_EQ(s.import, 1);
  EXPECT_TRUE(s.has_changes);
  EXPECT_EQ(analysis->destructive, (std::vector<std::string>{"a.gone", "a.swapped", "a.swapped2"}));
}

TEST(Plan, NoChangesMeansNoChangesAndTheEmptyEffectHash) {
  auto analysis = AnalysePlan(Plan({Change("a.same", {"no-op"})}), "");
  ASSERT_TRUE(analysis);
  EXPECT_FALSE(analysis->summary.has_changes);
  // sha256 of the empty string: no lines.
  EXPECT_EQ(analysis->summary.hash,
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Plan, TheHashNamesTheEffectNotTheOrderOrTheFile) {
  auto a = AnalysePlan(Plan({Change("a.x", {"create"}, nullptr, {{"v", 1}}),
                             Change("a.y", {"update"}, {{"v", 1}}, {{"v", 2}})}),
                       "k");
  auto b = AnalysePlan(Plan({Change("a.y", {"update"}, {{"v", 1}}, {{"v", 2}}),
                             Change("a.x", {"create"}, nullptr, {{"v", 1}})}),
                       "k");
  auto different = AnalysePlan(Plan({Change("a.x", {"create"}, nullptr, {{"v", 1}}),
                                     Change("a.y", {"update"}, {{"v", 1}}, {{"v", 3}})}),
                               "k");
  ASSERT_TRUE(a && b && different);
  EXPECT_EQ(a->summary.hash, b->summary.hash);
  EXPECT_NE(a->summary.hash, different->summary.hash);
}

TEST(Plan, TheKeyChangesTheHashAndIsReported) {
  std::string plan = Plan({Change("a.x", {"create"}, nullptr, {{"secret", "hunter2"}})});
  auto unkeyed = AnalysePlan(plan, "");
  auto keyed = AnalysePlan(plan, "plan-key");
  auto other = AnalysePlan(plan, "other-key");
  ASSERT_TRUE(unkeyed && keyed && other);
  EXPECT_FALSE(unkeyed->summary.keyed);
  EXPECT_TRUE(keyed->summary.keyed);
  EXPECT_NE(keyed->summary.hash, unkeyed->summary.hash);
  EXPECT_NE(keyed->summary.hash, other->summary.hash);
}

TEST(Plan, OutputChangesCountAsChangesButNotAsResources) {
  json plan = {{"resource_changes", json::array()},
               {"output_changes", {{"greeting", {{"actions", {"create"}}, {"after", "hi"}}}}}};
  auto analysis = AnalysePlan(plan.dump(), "");
  ASSERT_TRUE(analysis);
  EXPECT_TRUE(analysis->summary.has_changes);
  EXPECT_EQ(analysis->summary.add, 0);
}

TEST(Plan, DriftIsReadFromResourceDrift) {
  json plan = {{"resource_drift", {Change("berthtest_file.this", {"update"})}}};
  auto analysis = AnalysePlan(plan.dump(), "");
  ASSERT_TRUE(analysis);
  EXPECT_EQ(analysis->drifted, std::vector<std::string>{"berthtest_file.this"});
}

class PlanRefuses : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(PlanRefuses, NamingTheRule) {
  auto analysis = AnalysePlan(GetParam().first, "");
  ASSERT_FALSE(analysis);
  EXPECT_NE(analysis.error().message.find(GetParam().second), std::string::npos)
      << analysis.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, PlanRefuses,
    ::testing::Values(
        std::pair{"not json", "not a JSON object"}, std::pair{"[1,2]", "not a JSON object"},
        std::pair{R"({"resource_changes": 5})", "not an array"},
        std::pair{R"({"resource_changes": [{}]})", "has no address"},
        std::pair{R"({"resource_changes": [{"address": "a.b"}]})", "change.actions"},
        std::pair{R"({"resource_changes": [{"address": "a.b", "change": {"actions": "create"}}]})",
                  "change.actions"}));

}  // namespace
}  // namespace berth::tf
