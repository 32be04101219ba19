#include "core/environment_ref.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(EnvironmentRef, AKeyRoundTrips) {
  EnvironmentRef ref{"acme", "web", "dev"};
  EXPECT_EQ(ref.Key(), "acme/web/dev");
  auto back = EnvironmentRef::FromKey(ref.Key());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, ref);
}

// A key is the state's name and a token's scope: anything but three DNS labels could name
// another environment's state (a traversal, an empty part, a fourth part).
TEST(EnvironmentRef, OnlyThreeDnsLabelsAreAKey) {
  for (const char* bad :
       {"", "acme", "acme/web", "acme/web/dev/x", "acme//dev", "acme/web/", "/web/dev",
        "acme/../dev", "Acme/web/dev", "acme/web/-dev", "acme/web/dev?x=1", "acme/web/dev%2F"}) {
    EXPECT_FALSE(EnvironmentRef::FromKey(bad)) << bad;
  }
  EXPECT_FALSE(EnvironmentRef::FromKey("a/b/" + std::string(64, 'c')));
  EXPECT_TRUE(EnvironmentRef::FromKey("a/b/" + std::string(63, 'c')));
}

}  // namespace
}  // namespace berth
