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
  ASSERT_TRUE(
      PlaceMappedFiles({Mapping("home", ".config/gcloud/key.json"), Mapping("workspace", "creds")},
                       Home(), Workspace()));
  EXPECT_EQ(sys::ReadFile(Home() / ".config/gcloud/key.json").value(), "secret bytes");
  EXPECT_EQ(sys::ReadFile(Workspace() / "creds").value(), "secret bytes");
  struct stat info {};
  ASSERT_EQ(::stat((Workspace() / "creds").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
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
