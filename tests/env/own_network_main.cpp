// main() of a test binary whose every test runs in a network namespace of its own (when root;
// own_network.h).
#include <gtest/gtest.h>

#include <cstdio>

#include "own_network.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (auto entered = berth::testenv::EnterOwnNetwork(); !entered) {
    std::fprintf(stderr, "own network: %s\n", entered.error().ToString().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
