// The keys that seal berthd's secrets at rest: a value opens only whole, unaltered and in its
// own column and row, never in clear; a key another process added is found by reading the key file
// again; rotation puts a new key first and drops the unused ones.
#include "crypto/key_ring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/base64.h"
#include "crypto/aes_gcm.h"
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

TEST_F(KeyRingTest, AValueOpensOnlyWholeUnalteredAndInItsOwnColumnAndRow) {
  auto ring = Open();
  const SealBinding d1{"deployments.spec", RowOf({"acme", "d1"})};
  std::string sealed = ring->Seal("hunter2-secret", d1);
  EXPECT_TRUE(KeyRing::IsSealed(sealed));
  EXPECT_TRUE(KeyRing::IsRowBound(sealed));
  EXPECT_EQ(sealed.find("hunter2"), std::string::npos);
  EXPECT_EQ(KeyRing::KeyIdOf(sealed), ring->CurrentKeyId());
  EXPECT_NE(ring->Seal("hunter2-secret", d1), sealed);  // a fresh nonce
  EXPECT_EQ(*ring->Open(sealed, d1), "hunter2-secret");
  EXPECT_FALSE(ring->Open(sealed, {"state_versions.content", d1.row}));
  EXPECT_FALSE(ring->Open(sealed, {"deployments.spec", RowOf({"acme", "d2"})}));
  EXPECT_FALSE(ring->Open(sealed, {"deployments.spec", RowOf({"acm", "ed1"})}));
  EXPECT_NE(RowOf({"a", "bc"}), RowOf({"ab", "c"}));
  std::string altered = sealed;
  altered[altered.size() - 5] = altered[altered.size() - 5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(ring->Open(altered, d1));
  EXPECT_FALSE(ring->Open(sealed.substr(0, sealed.size() - 8), d1));
  EXPECT_EQ(*ring->Open(ring->Seal("", d1), d1), "");  // an empty value is sealed too
  // A value in clear is refused, saying how an operator seals those written before.
  auto in_clear = ring->Open(R"({"plain":true})", d1);
  ASSERT_FALSE(in_clear);
  EXPECT_NE(in_clear.error().message.find("--seal-plaintext"), std::string::npos)
      << in_clear.error().message;
}

// Format v1 bound a value to its column alone. A key from before v2 (no "rows" in its line)
// still opens v1 values; a key made since opens none, so a v1 value cannot stand in for a row.
TEST_F(KeyRingTest, AV1ValueOpensOnlyUnderAKeyFromBeforeV2) {
  const std::string old_secret(32, 'o');
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "kold " + Base64Encode(old_secret) + "\n"));
  auto v1 = [](const std::string& id, const std::string& secret, std::string_view plaintext) {
    return "berth-sealed:v1:" + id + ":" +
           Base64Encode(AesGcmSeal(secret, plaintext, "shared_secrets.value"));
  };
  const SealBinding seed{"shared_secrets.value", RowOf({"seed"})};
  auto ring = Open();
  EXPECT_FALSE(KeyRing::IsRowBound(v1("kold", old_secret, "x")));
  EXPECT_EQ(*ring->Open(v1("kold", old_secret, "old-seed"), seed), "old-seed");
  EXPECT_FALSE(ring->Open(v1("kold", old_secret, "old-seed"), {"deployments.spec", seed.row}));
  EXPECT_TRUE(KeyRing::IsRowBound(ring->Seal("x", seed)));  // the old key seals v2 now

  ASSERT_TRUE(ring->AddCurrentKey());
  auto text = sys::ReadFile(file_);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find(ring->CurrentKeyId() + " "), std::string::npos) << *text;
  EXPECT_NE(text->find(" rows\n"), std::string::npos) << *text;
  EXPECT_NE(text->find(Base64Encode(old_secret) + "\n"), std::string::npos) << *text;
  // A v1 value under the new key (as whoever stole it could make) is refused.
  auto lines = *text;
  std::string line = lines.substr(lines.find(ring->CurrentKeyId() + " "));
  std::string encoded = line.substr(line.find(' ') + 1);
  encoded = encoded.substr(0, encoded.find(' '));
  auto refused = Open()->Open(v1(ring->CurrentKeyId(), *Base64Decode(encoded), "forged"), seed);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("v1"), std::string::npos) << refused.error().message;
}

TEST_F(KeyRingTest, TheKeyFileIsTheOwnersAloneAndReadAgainForAKeyItLacks) {
  auto first = Open();
  struct stat st {};
  ASSERT_EQ(stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = Open();  // another berthd on the same file
  EXPECT_EQ(second->CurrentKeyId(), first->CurrentKeyId());
  ASSERT_TRUE(first->AddCurrentKey());
  const SealBinding cell{"c", RowOf({"r"})};
  std::string sealed = first->Seal("rotated", cell);
  EXPECT_EQ(*second->Open(sealed, cell), "rotated");

  auto other_dir = sys::TempDir::Create("key-ring-other");
  auto stranger = KeyRing::OpenOrCreate(other_dir->Path() / "keys");
  ASSERT_TRUE(stranger);
  auto refused = (*stranger)->Open(sealed, cell);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(KeyRing::KeyIdOf(sealed)), std::string::npos)
      << refused.error().message;
}

TEST_F(KeyRingTest, RotationKeepsTheNewKeyAndTheUsedOnes) {
  auto ring = Open();
  std::string oldest = ring->CurrentKeyId();
  const SealBinding cell{"c", RowOf({"r"})};
  std::string sealed_oldest = ring->Seal("a", cell);
  ASSERT_TRUE(ring->AddCurrentKey());
  std::string middle = ring->CurrentKeyId();
  ASSERT_TRUE(ring->AddCurrentKey());
  ASSERT_TRUE(ring->KeepOnly({oldest}));
  auto reread = Open();
  EXPECT_EQ(*reread->Open(sealed_oldest, cell), "a");
  auto text = sys::ReadFile(file_);
  EXPECT_EQ(text->find(middle), std::string::npos) << *text;
  ASSERT_TRUE(ring->KeepOnly({}));
  EXPECT_FALSE(Open()->Open(sealed_oldest, cell));
}

TEST_F(KeyRingTest, ABrokenKeyFileIsRefusedNamingIt) {
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "k1 not-base64!\n"));
  auto refused = KeyRing::OpenOrCreate(file_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().ToString().find(file_.string()), std::string::npos);
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "# nothing\n"));
  EXPECT_FALSE(KeyRing::OpenOrCreate(file_));
  // A mark other than rows, or more after it, is refused rather than read as a key from before.
  const std::string key = Base64Encode(std::string(32, 'k'));
  for (const std::string& line : {"k1 " + key + " row\n", "k1 " + key + " rows more\n"}) {
    ASSERT_TRUE(sys::WriteFileAtomic(file_, line));
    EXPECT_FALSE(KeyRing::OpenOrCreate(file_)) << line;
  }
  ASSERT_TRUE(sys::WriteFileAtomic(file_, "k1 " + key + " rows\n"));
  EXPECT_TRUE(KeyRing::OpenOrCreate(file_));
}

}  // namespace
}  // namespace berth::crypto
