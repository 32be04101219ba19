// A deployment's spec: parsed once from the request with every bad field named, stored as the
// JSON it writes, and read back the same.
#include "core/deployment_spec.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

using nlohmann::json;

TEST(DeploymentSpec, ARequestIsTypedAndItsStoredFormReadsBackTheSame) {
  auto spec = DeploymentSpec::FromRequest({{"op", "apply"},
                                           {"source", {{"bundle", "b-" + std::string(32, 'a')}}},
                                           {"variables", {{"name", "berth"}, {"count", 2}}},
                                           {"approval", {{"required", true}}}});
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->op, DeploymentOp::kApply);
  EXPECT_TRUE(spec->NeedsApproval());
  EXPECT_FALSE(spec->PlanOnly());
  EXPECT_EQ(spec->VariableNames(), (std::vector<std::string>{"count", "name"}));
  spec->labels = {{"team", "payments"}};
  spec->created_by = "tok-ci";
  auto stored = DeploymentSpec::FromStored(spec->ToJson());
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(*stored, *spec);
}

TEST(DeploymentSpec, EveryBadFieldIsNamed) {
  struct Case {
    json body;
    std::string path;
  };
  const Case cases[] = {
      {{{"op", "explode"}, {"source", {{"path", "/m"}}}}, "$.op"},
      {{{"op", "plan"}, {"source", json::object()}}, "$.source"},
      {{{"op", "plan"}, {"source", {{"path", "/m"}, {"bundle", "b-" + std::string(32, 'a')}}}},
       "$.source"},
      {{{"op", "plan"}, {"source", {{"path", "relative"}}}}, "$.source.path"},
      {{{"op", "plan"}, {"source", {{"path", "/m"}}}, {"variables", {{"9lives", 1}}}},
       "$.variables.9lives"},
      {{{"op", "plan"}, {"source", {{"path", "/m"}}}, {"approval", {{"required", true}}}},
       "$.approval.required"},
      {{{"op", "destroy"}, {"source", {{"path", "/m"}}}, {"plan_only", true}}, "$.plan_only"},
      {{{"op", "plan"}, {"source", {{"path", "/m"}}}, {"labels", {{"a", "b"}}}}, "$.labels"},
      {{{"op", "plan"}, {"source", {{"path", "/m"}}}, {"created_by", "tok-me"}}, "$.created_by"},
  };
  for (const Case& c : cases) {
    auto spec = DeploymentSpec::FromRequest(c.body);
    ASSERT_FALSE(spec) << c.body.dump();
    ASSERT_FALSE(spec.error().fields.empty());
    EXPECT_EQ(spec.error().fields.front().path, c.path) << spec.error().message;
  }
}

TEST(DeploymentSpec, AStoredSpecThatIsNoSpecIsAnInternalError) {
  auto broken = DeploymentSpec::FromStored(json::array());
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().kind, ErrorKind::kInternal);
  auto bad_labels = DeploymentSpec::FromStored(
      {{"op", "plan"}, {"source", {{"path", "/m"}}}, {"labels", {{"berth.dev/x", "1"}}}});
  ASSERT_FALSE(bad_labels);
  EXPECT_EQ(bad_labels.error().kind, ErrorKind::kInternal);
}

}  // namespace
}  // namespace berth
