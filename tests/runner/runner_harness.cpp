// The runner under test, started as users start it: a process with flags and environment.
#include "runner_harness.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "test_tools.h"
#include "tofu_test_env.h"

namespace berth::testing {

namespace fs = std::filesystem;

fs::path RunnerBinary() { return BERTH_RUNNER_BIN; }

std::string Kind(const RunnerRun& run) {
  if (!run.result.is_object() || !run.result["error"].is_object()) return "";
  return run.result["error"]["kind"];
}

std::string Describe(const RunnerRun& run) {
  constexpr size_t kEnd = 3000;
  return "exit " + std::to_string(run.exit_code) + "\nresult: " + run.result_text +
         "\nlog (end): " +
         (run.log.size() > kEnd ? run.log.substr(run.log.size() - kEnd) : run.log);
}

std::optional<RunnerHarness> RunnerHarness::Create() {
  auto tofu = testenv::TofuTestEnv::Shared();
  auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
  auto root = sys::TempDir::Create("runner-e2e");
  if (!tofu || !mirror || !root) {
    ADD_FAILURE() << "test environment: "
                  << (!tofu     ? tofu.error().ToString()
                      : !mirror ? mirror.error().ToString()
                                : "tmp");
    return std::nullopt;
  }
  RunnerHarness h(std::move(*root));
  h.tofu_dir_ = (*tofu)->Tofu().parent_path();
  h.mirror_ = *mirror;
  h.plugin_cache_ = (*tofu)->PluginCache();
  fs::create_directories(h.Root() / "home");
  return h;
}

fs::path RunnerHarness::Module(const std::string& example,
                               const std::map<std::string, std::string>& extra) {
  fs::path dir = Root() / ("module-" + example + "-" + std::to_string(++runs_));
  fs::copy(testenv::SourceDir() / "examples" / example, dir, fs::copy_options::recursive);
  for (const auto& [name, content] : extra) {
    EXPECT_TRUE(sys::WriteFileAtomic(dir / name, content));
  }
  return dir;
}

std::vector<std::string> RunnerHarness::Environment(std::vector<std::string> extra) const {
  std::vector<std::string> env = {
      "PATH=" + tofu_dir_.string() + ":/usr/local/bin:/usr/bin:/bin",
      "HOME=" + (Root() / "home").string(),
      "TF_PLUGIN_CACHE_DIR=" + plugin_cache_.string(),
      // Must be dropped by the runner: berth's own (TF would look for a workspace "elsewhere").
      "TF_WORKSPACE=elsewhere",
      // Offline for certain.
      "HTTPS_PROXY=http://127.0.0.1:9",
  };
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<std::string> RunnerHarness::Command(std::vector<std::string> args,
                                                const std::string& result) const {
  std::vector<std::string> argv = {RunnerBinary().string(), "run",
                                   "--providers=" + mirror_.string(), "--result=" + result};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunnerRun RunnerHarness::Run(std::vector<std::string> args, std::vector<std::string> extra_env) {
  std::string result = (Root() / ("result-" + std::to_string(++runs_) + ".json")).string();
  auto child = Start(std::move(args), &result, std::move(extra_env));
  return Finish(child, result);
}

sys::Subprocess RunnerHarness::Start(std::vector<std::string> args, std::string* result_path,
                                     std::vector<std::string> extra_env) {
  if (result_path->empty()) {
    *result_path = (Root() / ("result-" + std::to_string(++runs_) + ".json")).string();
  }
  sys::SpawnOptions options;
  options.argv = Command(std::move(args), *result_path);
  options.env = Environment(std::move(extra_env));
  options.pipe_output = true;
  auto child = sys::Subprocess::Spawn(options);
  if (!child) throw std::runtime_error(child.error().ToString());
  return std::move(*child);
}

bool RunnerHarness::WaitForOutput(sys::Subprocess& child, const std::string& marker,
                                  std::string* seen) {
  char buffer[4096];
  while (seen->find(marker) == std::string::npos) {
    ssize_t n = read(child.OutputFd(), buffer, sizeof buffer);
    if (n <= 0) return false;
    seen->append(buffer, static_cast<size_t>(n));
  }
  return true;
}

RunnerRun RunnerHarness::Finish(sys::Subprocess& child, const std::string& result_path) {
  RunnerRun run;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(child.OutputFd(), buffer, sizeof buffer);
    if (n <= 0) break;
    run.log.append(buffer, static_cast<size_t>(n));
  }
  run.exit_code = child.Wait();
  auto text = sys::ReadFile(result_path);
  if (text) {
    run.result_text = *text;
    run.result = nlohmann::json::parse(*text, nullptr, false);
    if (run.result.is_discarded()) run.result = nullptr;
  }
  return run;
}

}  // namespace berth::testing
