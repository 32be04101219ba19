// The run's work folder: the runner's own starts empty, so that a kept Pod's run never sees
// what an earlier one left (a file an older revision had).
#include "runner/work_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

TEST(WorkDir, TheDefaultFolderStartsEmptyAndAGivenOneIsUsedAsItIs) {
  auto module = sys::TempDir::Create("work-dir-module");
  ASSERT_TRUE(module);
  ASSERT_TRUE(sys::WriteFileAtomic(module->Path() / "main.tf", "# now\n"));
  RunOptions options;
  options.module = module->Path().string();
  options.ns = "work-dir-test";
  options.name = std::to_string(::getpid());
  const fs::path root = fs::path("/tmp") / (options.ns + "-" + options.name);
  fs::create_directories(root / ".terraform");
  ASSERT_TRUE(sys::WriteFileAtomic(root / "removed_in_this_revision.tf", "# then\n"));
  auto prepared = PrepareWorkDir(options);
  ASSERT_TRUE(prepared) << prepared.error().ToString();
  EXPECT_EQ(prepared->root, root);
  EXPECT_TRUE(fs::exists(root / "main.tf"));
  EXPECT_FALSE(fs::exists(root / "removed_in_this_revision.tf"));
  EXPECT_FALSE(fs::exists(root / ".terraform"));

  auto given = sys::TempDir::Create("work-dir-given");
  ASSERT_TRUE(given);
  ASSERT_TRUE(sys::WriteFileAtomic(given->Path() / "keep.txt", "mine"));
  options.workdir = given->Path().string();
  ASSERT_TRUE(PrepareWorkDir(options));
  EXPECT_TRUE(fs::exists(given->Path() / "keep.txt"));
  EXPECT_TRUE(fs::exists(given->Path() / "main.tf"));
  fs::remove_all(root);
}

// Who configures TF's CLI: berth's flags (per run), then the caller's TF_CLI_CONFIG_FILE (a pod
// template's registry credentials), then the image's baked-in mirror; one of them, never two.
TEST(TfEnvironment, TheCliConfigIsTheFlagsThenTheCallersThenTheImages) {
  auto dir = sys::TempDir::Create("tf-environment");
  ASSERT_TRUE(dir);
  fs::create_directories(dir->Path() / "mirror");
  const WorkDir work{.root = dir->Path(), .workdir = dir->Path()};
  auto configs = [&](const RunOptions& options, const std::vector<std::string>& caller) {
    std::vector<std::string> found;
    for (const std::string& entry : TfEnvironment(caller, options, work, nullptr))
      if (entry.starts_with("TF_CLI_CONFIG_FILE=")) found.push_back(entry.substr(19));
    return found;
  };
  const std::string mirror = (dir->Path() / "mirror").string();
  const std::string berths = (dir->Path() / ".berth-cli.tfrc").string();
  const std::vector<std::string> callers = {"TF_CLI_CONFIG_FILE=/pod/registry.tfrc",
                                            "BERTH_PROVIDERS=" + mirror};
  EXPECT_EQ(configs({.cli_config = "/flag.tfrc"}, callers), std::vector<std::string>{"/flag.tfrc"});
  EXPECT_EQ(configs({.providers = mirror}, callers), std::vector<std::string>{berths});
  EXPECT_EQ(configs({}, callers), std::vector<std::string>{"/pod/registry.tfrc"});
  EXPECT_EQ(configs({}, {"BERTH_PROVIDERS=" + mirror}), std::vector<std::string>{berths});
  EXPECT_EQ(configs({}, {}), std::vector<std::string>{});
}

}  // namespace
}  // namespace berth::runner
