// Labels of projects and environments, row by row: what is a label, which reserved labels act,
// and how a project's and an environment's combine.
#include "core/run_labels.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

using nlohmann::json;

struct BadLabels {
  json labels;
  std::string path;  // the field the error must name
  std::string rule;
};

class LabelsRefused : public ::testing::TestWithParam<BadLabels> {};

TEST_P(LabelsRefused, NamingTheLabel) {
  auto parsed = ParseLabels(GetParam().labels, "$.labels");
  ASSERT_FALSE(parsed) << GetParam().labels.dump();
  ASSERT_FALSE(parsed.error().fields.empty());
  EXPECT_EQ(parsed.error().fields.front().path, GetParam().path) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find(GetParam().rule), std::string::npos)
      << parsed.error().message;
}

const std::string kCpu = "berth.dev/runner-spec.kubernetes_request_cpu";
const std::string kCpuLimit = "berth.dev/runner-spec.kubernetes_limit_cpu";

INSTANTIATE_TEST_SUITE_P(
    Rows, LabelsRefused,
    ::testing::Values(
        BadLabels{json::array(), "$.labels", "must be an object of strings"},
        BadLabels{{{"team", 3}}, "$.labels['team']", "must be a string"},
        BadLabels{{{"-team", "x"}}, "$.labels['-team']", "must be a label key"},
        BadLabels{{{"Bad.Prefix/team", "x"}}, "$.labels['Bad.Prefix/team']", "label key"},
        BadLabels{
            {{std::string(64, 'a'), "x"}}, "$.labels['" + std::string(64, 'a') + "']", "label key"},
        BadLabels{
            {{"team", std::string(1025, 'x')}}, "$.labels['team']", "at most 1024 characters"},
        BadLabels{{{"berth.dev/owner", "x"}}, "$.labels['berth.dev/owner']", "reserved"},
        BadLabels{{{"berth.dev/runner-spec.kubernetes_gpu", "1"}},
                  "$.labels['berth.dev/runner-spec.kubernetes_gpu']",
                  "not a runner-spec label"},
        BadLabels{{{kCpu, "lots"}}, "$.labels['" + kCpu + "']", "Kubernetes quantity"},
        BadLabels{{{kCpu, "-1"}}, "$.labels['" + kCpu + "']", "must not be negative"},
        BadLabels{{{kCpu, "2"}, {kCpuLimit, "1500m"}},
                  "$.labels['" + kCpu + "']",
                  "must not exceed berth.dev/runner-spec.kubernetes_limit_cpu (2 > 1500m)"}));

TEST(Labels, ValidLabelsAndOverridesParse) {
  auto parsed = ParseLabels({{"team", "payments"},
                             {"example.com/cost-center", "42"},
                             {kCpu, "500m"},
                             {kCpuLimit, "8Ei"},
                             {"berth.dev/runner-spec.kubernetes_image", "registry/x:1"}},
                            "$.labels");
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto overrides = RunOverrides::FromLabels(*parsed);
  ASSERT_TRUE(overrides);
  EXPECT_EQ(overrides->request_cpu->ToString(), "500m");
  EXPECT_EQ(overrides->limit_cpu->ToString(), "8Ei");
  EXPECT_EQ(overrides->image, "registry/x:1");
  EXPECT_FALSE(ParseLabels(json::object(), "$.labels")->size());
}

TEST(Labels, AnEnvironmentsLabelsWinAndAreCheckedWithItsProjects) {
  auto merged = EffectiveLabels({{"team", "a"}, {kCpuLimit, "4"}}, {{"team", "b"}, {kCpu, "2"}});
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_EQ(merged->at("team"), "b");
  EXPECT_EQ(merged->at(kCpuLimit), "4");
  auto conflict = EffectiveLabels({{kCpuLimit, "1"}}, {{kCpu, "2"}});
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().fields.front().path, "$.labels['" + kCpu + "']");
  EXPECT_NE(conflict.error().message.find("with the project's labels"), std::string::npos);
}

TEST(Labels, TooManyAreRefused) {
  json many = json::object();
  for (int i = 0; i < 65; ++i) many["l" + std::to_string(i)] = "x";
  auto parsed = ParseLabels(many, "$.labels");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("at most 64 labels"), std::string::npos);
}

}  // namespace
}  // namespace berth
