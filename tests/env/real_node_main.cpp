// main() of a test binary that runs the real node: it takes network and mount namespaces of
// its own before gtest or anything else starts a thread (both are per thread until then).
#include <gtest/gtest.h>

#include <cstdio>

#include "real_node.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (auto entered = berth::testenv::EnterOwnNamespaces(); !entered) {
    std::fprintf(stderr, "real node: %s\n", entered.error().ToString().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
