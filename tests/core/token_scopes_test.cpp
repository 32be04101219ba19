#include "core/token_scopes.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(Scopes, EachScopeAllowsReadingAndItselfAndAdminAllowsAll) {
  const Scope all[] = {Scope::kRead, Scope::kDeploy, Scope::kApprove, Scope::kConfigure,
                       Scope::kAdmin};
  for (Scope held : all) {
    Scopes scopes = Scopes::Of({held});
    for (Scope needed : all) {
      bool expected = needed == Scope::kRead || needed == held || held == Scope::kAdmin;
      EXPECT_EQ(scopes.Allow(needed), expected) << ScopeName(held) << " for " << ScopeName(needed);
    }
  }
  EXPECT_FALSE(Scopes().Allow(Scope::kRead));  // no scope at all reads nothing
  Scopes both = Scopes::Of({Scope::kDeploy, Scope::kApprove});
  EXPECT_TRUE(both.Allow(Scope::kApprove));
  EXPECT_FALSE(both.Allow(Scope::kConfigure));
}

TEST(Scopes, NamesReadBackInOneOrder) {
  auto parsed = Scopes::Parse({"approve", "read"}, "$.scopes");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->Names(), (std::vector<std::string>{"read", "approve"}));
  EXPECT_EQ(*Scopes::Parse(parsed->Names(), "$"), *parsed);
}

TEST(Scopes, UnknownRepeatedOrNoScopeIsNamed) {
  auto none = Scopes::Parse({}, "$.scopes");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().fields.at(0).path, "$.scopes");
  auto bad = Scopes::Parse({"read", "root", "read"}, "$.scopes");
  ASSERT_FALSE(bad);
  ASSERT_EQ(bad.error().fields.size(), 2u);
  EXPECT_EQ(bad.error().fields[0].path, "$.scopes[1]");
  EXPECT_EQ(bad.error().fields[1].path, "$.scopes[2]");
}

}  // namespace
}  // namespace berth
