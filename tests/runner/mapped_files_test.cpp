// --file-mapping's placement: into the home or work folder, private, and never through a
// symbolic link that a hostile module laid in the way.
#include "runner/mapped_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

class MappedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("mapped-files");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    fs::create_directories(Home());
    fs::create_directories(Workspace());
    ASSERT_TRUE(sys::WriteFileAtomic(Source(), "secret bytes"));
  }
  fs::path Home() const { return dir_->Path() / "home"; }
  fs::path Workspace() const { return dir_->Path() / "work"; }
  fs::path Source() const { return dir_->Path() / "from-secret"; }
  FileMapping Mapping(const std::string& location, const std::string& path) const {
    return {.location = location, .path = path, .file = Source().string()};
  }

  std::optional<sys::TempDir> dir_;
};

TEST_F(MappedFiles, LandPrivatelyInTheirFolderWithTheFoldersOnTheWay) {
  auto placed =
      PlaceMappedFiles({Mapping("home", ".config/gcloud/key.json"), Mapping("workspace", "creds")},
                       Home(), Workspace());
  ASSERT_TRUE(placed) << placed.error().ToString();
  EXPECT_EQ(sys::ReadFile(Home() / ".config/gcloud/key.json").value(), "secret bytes");
  EXPECT_EQ(sys::ReadFile(Workspace() / "creds").value(), "secret bytes");
  struct stat info {};
  ASSERT_EQ(::stat((Workspace() / "creds").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

// A kept runner Pod's home outlives the run: what the run mapped there goes with the run, even
// when the module moved its folder away and put a link to somewhere else in its place.
TEST_F(MappedFiles, TheFilesMappedIntoHomeGoWhenTheRunEnds) {
  const fs::path outside = dir_->Path() / "outside";
  fs::create_directories(outside);
  ASSERT_TRUE(sys::WriteFileAtomic(outside / "key.json", "not the run's"));
  {
    auto placed = PlaceMappedFiles(
        {Mapping("home", ".aws/credentials"), Mapping("home", ".config/gcloud/key.json"),
         Mapping("workspace", "creds")},
        Home(), Workspace());
    ASSERT_TRUE(placed) << placed.error().ToString();
    EXPECT_TRUE(fs::exists(Home() / ".aws/credentials"));
    fs::rename(Home() / ".config/gcloud", dir_->Path() / "moved");
    fs::create_symlink(outside, Home() / ".config/gcloud");
  }
  EXPECT_FALSE(fs::exists(Home() / ".aws/credentials"));
  EXPECT_FALSE(fs::exists(dir_->Path() / "moved/key.json")) << "removed where it was written";
  EXPECT_EQ(sys::ReadFile(outside / "key.json").value(), "not the run's");
  EXPECT_TRUE(fs::exists(Workspace() / "creds")) << "the work folder is the next run's to empty";
}

TEST_F(MappedFiles, NeverFollowASymbolicLinkOfTheModule) {
  const fs::path outside = dir_->Path() / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, Workspace() / "s");
  fs::create_symlink(outside / "victim", Workspace() / "creds");
  auto through_folder = PlaceMappedFiles({Mapping("workspace", "s/creds")}, Home(), Workspace());
  ASSERT_FALSE(through_folder);
  EXPECT_NE(through_folder.error().message.find("workspace:s/creds"), std::string::npos)
      << through_folder.error().message;
  EXPECT_FALSE(PlaceMappedFiles({Mapping("workspace", "creds")}, Home(), Workspace()));
  EXPECT_TRUE(fs::is_empty(outside)) << "nothing was written outside the work folder";
}

}  // namespace
}  // namespace berth::runner
