// Local runs outlive the berthd that started them (a restart adopts them): a test that killed a
// berthd ends what that berthd left, so that no runner outlives the test.
#pragma once

#include <filesystem>

namespace berth::testenv {

// Kills, with its process group, every process whose working folder is under dir (a local run's
// sandbox, as the launcher starts it there); how many it found.
int StopRunsUnder(const std::filesystem::path& dir);

}  // namespace berth::testenv
