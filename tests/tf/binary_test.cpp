// Choosing tofu or terraform.
#include "tf/binary.h"

#include <gtest/gtest.h>

#include "sys/files.h"

namespace berth::tf {
namespace {

class ChooseBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = sys::TempDir::Create("bin-a");
    auto b = sys::TempDir::Create("bin-b");
    ASSERT_TRUE(a && b);
    a_.emplace(std::move(*a));
    b_.emplace(std::move(*b));
  }
  void Executable(const sys::TempDir& dir, const std::string& name) {
    ASSERT_TRUE(
        sys::WriteFileAtomic(dir.Path() / name, "#!/bin/sh\n", std::filesystem::perms::owner_all));
  }
  std::string Path() const { return a_->Path().string() + ":" + b_->Path().string(); }
  std::optional<sys::TempDir> a_, b_;
};

TEST_F(ChooseBinaryTest, AutoPrefersTofuWhereverItIsOnPath) {
  Executable(*a_, "terraform");
  Executable(*b_, "tofu");
  auto chosen = ChooseBinary("auto", "", Path());
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->name, "tofu");
  EXPECT_EQ(chosen->path, b_->Path() / "tofu");
}

TEST_F(ChooseBinaryTest, AutoFallsBackToTerraform) {
  Executable(*a_, "terraform");
  auto chosen = ChooseBinary("auto", "", Path());
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->name, "terraform");
}

TEST_F(ChooseBinaryTest, AnExplicitChoiceThatIsMissingIsAnError) {
  Executable(*a_, "tofu");
  auto chosen = ChooseBinary("terraform", "", Path());
  ASSERT_FALSE(chosen);
  EXPECT_NE(chosen.error().message.find("terraform is not on PATH"), std::string::npos);
}

TEST_F(ChooseBinaryTest, AFileThatIsNotExecutableIsSkipped) {
  ASSERT_TRUE(sys::WriteFileAtomic(a_->Path() / "tofu", "not executable"));
  Executable(*b_, "tofu");
  auto chosen = ChooseBinary("tofu", "", Path());
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->path, b_->Path() / "tofu");
}

TEST_F(ChooseBinaryTest, BinNamesItOutright) {
  Executable(*a_, "terraform-1.9");
  auto chosen = ChooseBinary("auto", (a_->Path() / "terraform-1.9").string(), "");
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->name, "terraform");
  EXPECT_FALSE(ChooseBinary("auto", "/nonexistent/tofu", ""));
  EXPECT_FALSE(ChooseBinary("opentofu", "", Path()));
}

TEST(WritesJsonInto, OnlyTofuFrom1Point12) {
  Binary tofu{"tofu", "/bin/tofu"}, terraform{"terraform", "/bin/terraform"};
  EXPECT_TRUE(WritesJsonInto(tofu, "1.12.6"));
  EXPECT_TRUE(WritesJsonInto(tofu, "1.13.0-beta1"));
  EXPECT_TRUE(WritesJsonInto(tofu, "2.0.0"));
  EXPECT_FALSE(WritesJsonInto(tofu, "1.11.9"));
  EXPECT_FALSE(WritesJsonInto(tofu, "0.99.0"));
  EXPECT_FALSE(WritesJsonInto(tofu, ""));
  EXPECT_FALSE(WritesJsonInto(tofu, "dev"));
  EXPECT_TRUE(WritesJsonInto(tofu, "1.12"));
  EXPECT_FALSE(WritesJsonInto(tofu, "1x.12.0"));
  EXPECT_FALSE(WritesJsonInto(tofu, "1.1x2.0"));
  EXPECT_FALSE(WritesJsonInto(terraform, "1.14.0"));
}

}  // namespace
}  // namespace berth::tf
