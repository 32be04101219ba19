// The keys that seal berthd's secrets at rest: a value opens only whole, unaltered and in its
// own column; a key another process added is found by reading the key file again; rotation
// puts a new key first and drops the unused ones.
#include "crypto/key_ring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "sys/files.h"

namespace berth::crypto {
namespace {

class KeyRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("key-ring");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    file_ = dir_->Path() / "keys";
  }
  std::shared_ptr<KeyRing> Open() {
    auto ring = KeyRing::OpenOrCreate(file_);
    EXPECT_TRUE(ring) << ring.error().ToString();
    return ring ? *ring : nullptr;
  }
  std::optional<sys::TempDir> dir_;
  std::filesystem::path file_;
};

TEST_F(KeyRingTest, AValueOpensOnlyWholeUnalteredAndInItsOwnColumn) {
  auto ring = Open();
  std::string sealed = ring->Seal("hunter2-secret", "deployments.spec");
  EXPECT_TRUE(KeyRing::IsSealed(sealed));
  EXPECT_EQ(sealed.find("hunter2"), std::string::npos);
  EXPECT_EQ(KeyRing::KeyIdOf(sealed), ring->CurrentKeyId());
  EXPECT_NE(ring->Seal("hunter2-secret", "deployments.spec"), sealed);  // a fresh nonce
  EXPECT_EQ(*ring->Open(sealed, "deployments.spec"), "hunter2-secret");
  EXPECT_FALSE(ring->Open(sealed, "state_versions.content"));
  std::string altered = sealed;
  altered[altered.size() - 5] = altered[altered.size() - 5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(ring->Open(altered, "deployments.spec"));
  EXPECT_FALSE(ring->Open(sealed.substr(0, sealed.size() - 8), "deployments.spec"));
  // A value from before encryption at rest reads as it is.
  EXPECT_EQ(*ring->Open(R"({"plain":true})", "deployments.spec"), R"({"plain":true})");
  EXPECT_EQ(*ring->Open(ring->Seal("", "x"), "x"), "");  // an empty value is sealed too
}

TEST_F(KeyRingTest, TheKeyFileIsTheOwnersAloneAndReadAgainForAKeyItLacks) {
  auto first = Open();
  struct stat st {};
  ASSERT_EQ(stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = Open();  // another berthd on the same file
  EXPECT_EQ(second->CurrentKeyId(), first->CurrentKeyId());
  ASSERT_TRUE(first->AddCurrentKey());
  std::string sealed = first->Seal("rotated", "c");
  EXPECT_EQ(*second->Open(sealed, "c"), "rotated");

  auto other_dir = sys::TempDir::Create("key-ring-other");
  auto stranger = KeyRing::OpenOrCreate(other_dir->Path() / "keys");
  ASSERT_TRUE(stranger);
  auto refused = (*stranger)->Open(sealed, "c");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(KeyRing::KeyIdOf(sealed)), std::string::npos)
      << refused.error().message;
}

TEST_F(KeyRingTest, RotationKeepsTheNewKeyAndTheUsedOnes) {
  auto ring = Open();
  std::string oldest = ring->CurrentKeyId();
  std::string sealed_oldest = ring->Seal("a", "c");
  ASSERT_TRUE(ring->AddCurrentKey());
  std::string middle = ring->CurrentKeyId();
  ASSERT_TRUE(ring->AddCurrentKey());
  ASSERT_TRUE(ring->KeepOnly({oldest}));
  auto reread = Open();
  EXPECT_EQ(*reread->Open(sealed_oldest, "c"), "a");
  auto text = sys::ReadFile(file_);
  EXPECT_EQ(text->find(middle), std::string::npos) << *text;
  ASSERT_TRUE(ring->KeepOnly({}));
  EXPECT_FALSE(Open()->Open(sealed_oldest, "c"));
}

TEST_F(KeyRingTest, ABrokenKeyFileIsRefusedNamingIt) {
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "k1 not-base64!\n"));
  auto refused = KeyRing::OpenOrCreate(file_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().ToString().find(file_.string()), std::string::npos);
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "# nothing\n"));
  EXPECT_FALSE(KeyRing::OpenOrCreate(file_));
}

}  // namespace
}  // namespace berth::crypto
