// Runs the real runner binary on copies of examples/ modules with the pinned tofu, offline,
// and reads back its result document and log.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testing {

struct RunnerRun {
  int exit_code = -1;
  std::string log;          // stdout and stderr
  nlohmann::json result;    // parsed result document (null if absent or invalid)
  std::string result_text;  // as written
};

// The result's error kind, or "" on success or without a result.
std::string Kind(const RunnerRun& run);
// Exit code, result and the end of the log: what a failing assertion should show.
std::string Describe(const RunnerRun& run);

class RunnerHarness {
 public:
  // Fails the current test (and returns nullopt) when the test environment is missing.
  static std::optional<RunnerHarness> Create();

  const std::filesystem::path& Root() const { return root_.Path(); }

  // A copy of examples/<example> under the harness root, plus extra files (name -> content).
  std::filesystem::path Module(const std::string& example,
                               const std::map<std::string, std::string>& extra = {});

  // Runs `runner run ARGS --providers=MIRROR --result=...`, to the end.
  RunnerRun Run(std::vector<std::string> args, std::vector<std::string> extra_env = {});
  // Starts the same in the background; its output goes to a pipe.
  sys::Subprocess Start(std::vector<std::string> args, std::string* result_path,
                        std::vector<std::string> extra_env = {});
  static RunnerRun Finish(sys::Subprocess& child, const std::string& result_path);
  // Reads the child's output until a line contains marker (or the output ends).
  static bool WaitForOutput(sys::Subprocess& child, const std::string& marker, std::string* seen);

  std::vector<std::string> Environment(std::vector<std::string> extra) const;

 private:
  explicit RunnerHarness(sys::TempDir root) : root_(std::move(root)) {}
  std::vector<std::string> Command(std::vector<std::string> args, const std::string& result) const;

  sys::TempDir root_;
  std::filesystem::path tofu_dir_;
  std::filesystem::path mirror_;
  std::filesystem::path plugin_cache_;
  int runs_ = 0;
};

std::filesystem::path RunnerBinary();

}  // namespace berth::testing
