// Module archives: a good one is laid out; each hostile kind is refused, naming the entry,
// and writes nothing outside the target.
#include "runner/module_archive.h"

#include <gtest/gtest.h>

#include "sys/files.h"
#include "tar_builder.h"

namespace berth::runner {
namespace {

using berth::testing::TarBuilder;

class ModuleArchive : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("archive-test");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    target_ = dir_->Path() / "module";
    std::filesystem::create_directory(target_);
  }
  std::optional<sys::TempDir> dir_;
  std::filesystem::path target_;
};

TEST_F(ModuleArchive, ExtractsFilesFoldersAndLinksInside) {
  auto gz = TarBuilder()
                .Dir("mod")
                .File("mod/main.tf", "resource \"terraform_data\" \"x\" {}\n")
                .File("mod/run.sh", "#!/bin/sh\n", 04755)
                .Symlink("mod/link.tf", "main.tf")
                .Symlink("mod/sub/up.tf", "../main.tf")
                .PaxPath(std::string(150, 'p') + "/long.tf", "long")
                .TarGz();
  auto r = ExtractModuleArchiveBytes(gz, target_);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*sys::ReadFile(target_ / "mod/main.tf"), "resource \"terraform_data\" \"x\" {}\n");
  EXPECT_EQ(*sys::ReadFile(target_ / "mod/link.tf"), *sys::ReadFile(target_ / "mod/main.tf"));
  EXPECT_EQ(*sys::ReadFile(target_ / (std::string(150, 'p') + "/long.tf")), "long");
  auto perms = std::filesystem::status(target_ / "mod/run.sh").permissions();
  EXPECT_EQ(perms, static_cast<std::filesystem::perms>(0755)) << "setuid must be dropped";
}

TEST_F(ModuleArchive, ConcatenatedGzipMembersAreOneStream) {
  std::string tar = TarBuilder().File("a.tf", "a").Tar();
  std::string gz = berth::testing::Gzip(tar.substr(0, 512)) + berth::testing::Gzip(tar.substr(512));
  ASSERT_TRUE(ExtractModuleArchiveBytes(gz, target_));
  EXPECT_EQ(*sys::ReadFile(target_ / "a.tf"), "a");
}

struct Hostile {
  std::string name;
  std::string archive;
  std::string rule;
};

class HostileArchive : public ModuleArchive, public ::testing::WithParamInterface<Hostile> {};

TEST_P(HostileArchive, IsRefusedAndWritesNothingOutside) {
  auto r = ExtractModuleArchiveBytes(GetParam().archive, target_,
                                     ArchiveLimits{.max_total_bytes = 1 << 20, .max_entries = 50});
  ASSERT_FALSE(r) << GetParam().name << " was accepted";
  EXPECT_NE(r.error().message.find(GetParam().rule), std::string::npos) << r.error().message;
  EXPECT_TRUE(r.error().message.starts_with("module archive refused")) << r.error().message;
  for (const auto& entry : std::filesystem::directory_iterator(dir_->Path())) {
    EXPECT_EQ(entry.path(), target_) << "wrote outside the target: " << entry.path();
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/berth-escaped"));
}

std::vector<Hostile> HostileArchives() {
  TarBuilder many;
  for (int i = 0; i < 60; ++i) many.File("f" + std::to_string(i), "x");
  std::string truncated = TarBuilder().File("a.tf", std::string(2000, 'a')).Tar().substr(0, 1200);
  std::string bad_checksum = TarBuilder().File("a.tf", "a").Tar();
  bad_checksum[0] = 'b';
  return {
      {"absolute", TarBuilder().File("/tmp/berth-escaped", "x").TarGz(), "absolute path"},
      {"dotdot", TarBuilder().File("../berth-escaped", "x").TarGz(), "\"..\""},
      {"dotdot-inside", TarBuilder().File("a/../../berth-escaped", "x").TarGz(), "\"..\""},
      {"link-absolute", TarBuilder().Symlink("etc", "/etc").TarGz(), "absolute path"},
      {"link-escapes", TarBuilder().Symlink("a/up", "../../x").TarGz(), "leaves the module"},
      {"write-through-link", TarBuilder().Symlink("d", "sub").File("d/x.tf", "x").TarGz(),
       "below a symbolic link"},
      {"hardlink", TarBuilder().Hardlink("h", "/etc/passwd").TarGz(), "hard links"},
      {"device", TarBuilder().Device("null").TarGz(), "device"},
      {"fifo", TarBuilder().Fifo("pipe").TarGz(), "FIFO"},
      {"size-bomb", TarBuilder().ZeroFile("zeros", 4 << 20).TarGz(), "bytes"},
      {"entry-bomb", many.TarGz(), "more than 50 entries"},
      {"not-gzip", "plain text, not an archive", "gzip"},
      {"truncated", berth::testing::Gzip(truncated), "past the end"},
      {"bad-checksum", berth::testing::Gzip(bad_checksum), "checksum"},
  };
}

INSTANTIATE_TEST_SUITE_P(Kinds, HostileArchive, ::testing::ValuesIn(HostileArchives()),
                         [](const auto& row) {
                           std::string n = row.param.name;
                           for (auto& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace berth::runner
