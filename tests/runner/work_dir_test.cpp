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

}  // namespace
}  // namespace berth::runner
