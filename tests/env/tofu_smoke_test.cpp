// The pinned tofu runs init and apply offline, with berth's test provider from the mirror.
#include <gtest/gtest.h>

#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"
#include "tofu_test_env.h"

namespace berth::testenv {
namespace {

Result<sys::Completed> Tofu(const TofuTestEnv& env, const std::filesystem::path& dir,
                            std::vector<std::string> args) {
  sys::SpawnOptions options;
  options.argv = {env.Tofu().string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.env = env.Environment(dir);
  options.working_dir = dir.string();
  return sys::RunToCompletion(options);
}

TEST(TofuSmoke, InitAndApplyWithTheMirroredProviderOffline) {
  auto env = TofuTestEnv::Shared();
  ASSERT_TRUE(env) << env.error().ToString();
  auto dir = sys::TempDir::Create("tofu-smoke");
  ASSERT_TRUE(dir);
  std::filesystem::copy(SourceDir() / "examples/file/main.tf", dir->Path() / "main.tf");
  auto target = dir->Path() / "out/greeting.txt";

  auto init = Tofu(**env, dir->Path(), {"init", "-input=false", "-no-color"});
  ASSERT_TRUE(init);
  ASSERT_EQ(init->exit_code, 0) << init->output;
  EXPECT_NE(init->output.find("berth/berthtest v0.1.0"), std::string::npos) << init->output;

  auto apply = Tofu(**env, dir->Path(),
                    {"apply", "-auto-approve", "-input=false", "-no-color",
                     "-var=path=" + target.string(), "-var=content=smoke"});
  ASSERT_TRUE(apply);
  ASSERT_EQ(apply->exit_code, 0) << apply->output;
  auto written = sys::ReadFile(target);
  ASSERT_TRUE(written) << written.error().ToString();
  EXPECT_EQ(*written, "smoke");
  auto state = sys::ReadFile(dir->Path() / "terraform.tfstate");
  ASSERT_TRUE(state);
  EXPECT_NE(state->find("\"berthtest_file\""), std::string::npos);
}

TEST(TofuSmoke, AProviderOutsideTheMirrorCannotBeInstalled) {
  auto env = TofuTestEnv::Shared();
  ASSERT_TRUE(env) << env.error().ToString();
  auto dir = sys::TempDir::Create("tofu-offline");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(
      dir->Path() / "main.tf",
      "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\" }\n  }\n}\n"));
  auto init = Tofu(**env, dir->Path(), {"init", "-input=false", "-no-color"});
  ASSERT_TRUE(init);
  EXPECT_NE(init->exit_code, 0) << "tofu reached beyond its mirror:\n" << init->output;
}

}  // namespace
}  // namespace berth::testenv
