// Where the pinned test tools built by scripts/testenv are: from BERTH_TEST_* variables, or else
// from the environment file that scripts/testenv writes in its cache.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::testenv {

// variable is one of BERTH_TEST_TOFU, BERTH_TEST_TOFU_CLI_CONFIG, BERTH_TEST_PROVIDER_MIRROR,
// BERTH_TEST_ETCD, BERTH_TEST_KUBE_APISERVER, BERTH_TEST_KUBE_CONTROLLER_MANAGER. The error says
// to run scripts/testenv.
Result<std::filesystem::path> TestTool(std::string_view variable);

// The berth source tree (for examples/).
std::filesystem::path SourceDir();

}  // namespace berth::testenv
