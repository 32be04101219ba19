// File helpers: atomic writes replace whole files, errors name the path, temp folders vanish,
// and a file another process could have replaced is read only when it is a small regular one.
#include "sys/files.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

// What a run leaves in its folder is the module's to choose: berthd reads it only as a small
// regular file beneath the folder, and says what it found instead.
class ReadBeneath : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("beneath");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    std::filesystem::create_directories(Root() / "out");
    ASSERT_TRUE(WriteFileAtomic(Root() / "elsewhere.json", "{\"theirs\":true}"));
  }
  const std::filesystem::path& Root() const { return dir_->Path(); }
  Result<std::string> Read(size_t max = 1024) {
    return ReadFileBeneath(Root(), "out/result.json", max);
  }
  std::optional<TempDir> dir_;
};

TEST_F(ReadBeneath, ARegularFileIsReadWhole) {
  ASSERT_TRUE(WriteFileAtomic(Root() / "out/result.json", "{}"));
  auto read = Read();
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_EQ(*read, "{}");
  EXPECT_EQ(Read(1).error().kind, ErrorKind::kFailedPrecondition);  // over the cap
  EXPECT_NE(Read(1).error().message.find("larger than 1 bytes"), std::string::npos);
}

TEST_F(ReadBeneath, AnAbsentFileIsNotFound) {
  EXPECT_EQ(Read().error().kind, ErrorKind::kNotFound);
}

TEST_F(ReadBeneath, ALinkToAnEndlessDeviceOrAnotherFileIsRefusedNotFollowed) {
  for (const char* target : {"/dev/zero", "../elsewhere.json"}) {
    std::filesystem::remove(Root() / "out/result.json");
    std::filesystem::create_symlink(target, Root() / "out/result.json");
    auto read = Read(uint64_t{1} << 40);
    ASSERT_FALSE(read) << target;
    EXPECT_EQ(read.error().kind, ErrorKind::kFailedPrecondition);
    EXPECT_NE(read.error().message.find("a symbolic link"), std::string::npos)
        << read.error().ToString();
  }
}

TEST_F(ReadBeneath, AFolderOnTheWayThatIsALinkIsRefused) {
  std::filesystem::remove_all(Root() / "out");
  std::filesystem::create_directories(Root() / "real");
  ASSERT_TRUE(WriteFileAtomic(Root() / "real/result.json", "{}"));
  std::filesystem::create_directory_symlink(Root() / "real", Root() / "out");
  auto read = Read();
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("a symbolic link where a folder"), std::string::npos)
      << read.error().ToString();
}

TEST_F(ReadBeneath, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(mkfifo((Root() / "out/result.json").c_str(), 0600), 0);
  auto read = Read();  // a blocking open would wait here for ever
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("a FIFO"), std::string::npos) << read.error().ToString();
}

TEST_F(ReadBeneath, ASocketOrAFolderInItsPlaceIsRefused) {
  std::filesystem::create_directories(Root() / "out/result.json");
  EXPECT_NE(Read().error().message.find("a folder"), std::string::npos);
  std::filesystem::remove(Root() / "out/result.json");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{.sun_family = AF_UNIX};
  std::string path = (Root() / "out/result.json").string();
  ASSERT_LT(path.size(), sizeof address.sun_path);
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_NE(Read().error().message.find("a socket"), std::string::npos);
  close(fd);
}

TEST_F(ReadBeneath, APathThatClimbsOutIsRefused) {
  auto read = ReadFileBeneath(Root() / "out", "../elsewhere.json", 1024);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace berth::sys
