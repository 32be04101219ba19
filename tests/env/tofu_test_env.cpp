// The tofu environment of the tests.
#include "tofu_test_env.h"

#include <memory>

#include "test_tools.h"

namespace berth::testenv {

Result<TofuTestEnv*> TofuTestEnv::Shared() {
  static Result<std::unique_ptr<TofuTestEnv>> env = []() -> Result<std::unique_ptr<TofuTestEnv>> {
    auto tofu = TestTool("BERTH_TEST_TOFU");
    if (!tofu) return tofu.error();
    auto config = TestTool("BERTH_TEST_TOFU_CLI_CONFIG");
    if (!config) return config.error();
    auto cache = sys::TempDir::Create("berth-plugin-cache");
    if (!cache) return cache.error();
    return std::unique_ptr<TofuTestEnv>(new TofuTestEnv(*tofu, *config, std::move(*cache)));
  }();
  if (!env) return env.error();
  return env->get();
}

std::vector<std::string> TofuTestEnv::Environment(const std::filesystem::path& home) const {
  return {
      "HOME=" + home.string(),
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "TF_CLI_CONFIG_FILE=" + cli_config_.string(),
      "TF_PLUGIN_CACHE_DIR=" + plugin_cache_.Path().string(),
      "TF_IN_AUTOMATION=1",
      "TF_INPUT=0",
      "CHECKPOINT_DISABLE=1",
      // Offline for certain: a request that escapes the mirror meets a closed port.
      "HTTPS_PROXY=http://127.0.0.1:9",
      "HTTP_PROXY=http://127.0.0.1:9",
      "NO_PROXY=",
  };
}

}  // namespace berth::testenv
