// File helpers: atomic writes replace whole files, errors name the path, temp folders vanish.
#include "sys/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace berth::sys {
namespace {

TEST(Files, WriteAtomicReplacesTheWholeFileWithTheModeAsked) {
  auto dir = TempDir::Create("files-test");
  ASSERT_TRUE(dir);
  auto path = dir->Path() / "f";
  ASSERT_TRUE(WriteFileAtomic(path, "a long first version"));
  ASSERT_TRUE(WriteFileAtomic(path, "short"));
  EXPECT_EQ(*ReadFile(path), "short");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir->Path()), {}), 1)
      << "a temporary file was left behind";
}

TEST(Files, ReadingAMissingFileIsNotFoundWithThePath) {
  auto r = ReadFile("/nonexistent/file");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(r.error().context, "/nonexistent/file");
}

TEST(Files, WritingIntoAMissingFolderFailsAndNamesIt) {
  auto r = WriteFileAtomic("/nonexistent/dir/file", "x");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().context.find("/nonexistent/dir"), std::string::npos);
}

TEST(Files, ATempDirIsRemovedWithItsContents) {
  std::filesystem::path path;
  {
    auto dir = TempDir::Create("files-test");
    ASSERT_TRUE(dir);
    path = dir->Path();
    std::filesystem::create_directories(path / "a/b");
    ASSERT_TRUE(WriteFileAtomic(path / "a/b/c", "x"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace berth::sys
