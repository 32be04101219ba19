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

// examples/heavy's provider has a large cloud provider's schema (the benchmarks' fixture): it
// holds thousands of resource types, and its one real resource applies.
TEST(TofuSmoke, TheHeavyProviderHasALargeSchemaAndItsFileResourceApplies) {
  auto env = TofuTestEnv::Shared();
  ASSERT_TRUE(env) << env.error().ToString();
  auto dir = sys::TempDir::Create("tofu-heavy");
  ASSERT_TRUE(dir);
  std::filesystem::copy(SourceDir() / "examples/heavy/main.tf", dir->Path() / "main.tf");
  auto init = Tofu(**env, dir->Path(), {"init", "-input=false", "-no-color"});
  ASSERT_TRUE(init);
  ASSERT_EQ(init->exit_code, 0) << init->output;
  sys::SpawnOptions schema_options;
  schema_options.argv = {(*env)->Tofu().string(), "providers", "schema", "-json"};
  schema_options.env = (*env)->Environment(dir->Path());
  schema_options.working_dir = dir->Path().string();
  schema_options.output_path = "/dev/null";
  schema_options.stdout_path = (dir->Path() / "schema.json").string();
  auto schema = sys::RunToCompletion(schema_options);
  ASSERT_TRUE(schema);
  ASSERT_EQ(schema->exit_code, 0);
  auto text = sys::ReadFile(dir->Path() / "schema.json");
  ASSERT_TRUE(text);
  size_t types = 0;
  for (size_t at = 0; (at = text->find("\"berthheavy_type_", at)) != std::string::npos; ++at)
    ++types;
  EXPECT_GE(types, 2000u);
  auto apply = Tofu(**env, dir->Path(),
                    {"apply", "-auto-approve", "-input=false", "-no-color",
                     "-var=path=" + (dir->Path() / "heavy.txt").string()});
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->exit_code, 0) << apply->output;
  EXPECT_TRUE(std::filesystem::exists(dir->Path() / "heavy.txt"));
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
