// age to X25519 recipients, held to the age tool itself (Debian's age and age-keygen): what we
// encrypt, age decrypts; what age encrypts, we decrypt; anything changed, or another key, does
// not open.
#include "crypto/age.h"

#include <gtest/gtest.h>

#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::crypto {
namespace {

class Age : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("age-test");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    identity_ = Keygen("key.txt");
    other_ = Keygen("other.txt");
    recipient_ = RecipientOf(identity_);
  }
  // age-keygen's identity file: "# public key: age1...", then the AGE-SECRET-KEY-1 line.
  std::string Keygen(const std::string& name) {
    auto path = dir_->Path() / name;
    auto made = sys::RunToCompletion({.argv = {"/usr/bin/age-keygen", "-o", path.string()}});
    EXPECT_TRUE(made && made->exit_code == 0);
    return sys::ReadFile(path).value();
  }
  static std::string RecipientOf(const std::string& identity) {
    size_t at = identity.find("age1");
    return identity.substr(at, identity.find('\n', at) - at);
  }
  // Runs age with args on input; its stdout.
  std::string RunAge(std::vector<std::string> args, const std::string& input) {
    auto in = dir_->Path() / "in", out = dir_->Path() / "out";
    EXPECT_TRUE(sys::WriteFileAtomic(in, input));
    std::vector<std::string> argv = {"/usr/bin/age"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"-o", out.string(), in.string()});
    auto ran = sys::RunToCompletion({.argv = argv});
    EXPECT_TRUE(ran && ran->exit_code == 0) << (ran ? ran->output : "");
    auto text = sys::ReadFile(out);
    return text ? *text : "";
  }

  std::optional<sys::TempDir> dir_;
  std::string identity_, other_, recipient_;
};

TEST_F(Age, WhatWeEncryptTheAgeToolDecryptsAtEverySize) {
  auto key = dir_->Path() / "key.txt";
  for (size_t size : {size_t{0}, size_t{1}, size_t{65536}, size_t{65537}, size_t{200000}}) {
    std::string plaintext(size, 'x');
    for (size_t i = 0; i < size; ++i) plaintext[i] = static_cast<char>('a' + i % 26);
    auto sealed = AgeEncryptArmored(plaintext, recipient_);
    ASSERT_TRUE(sealed) << sealed.error().ToString();
    EXPECT_TRUE(sealed->starts_with("-----BEGIN AGE ENCRYPTED FILE-----\n"));
    EXPECT_EQ(RunAge({"-d", "-i", key.string()}, *sealed), plaintext) << size;
    auto back = AgeDecryptArmored(*sealed, identity_);
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_EQ(*back, plaintext);
  }
}

TEST_F(Age, WhatTheAgeToolEncryptsWeDecryptAndNothingElseOpens) {
  std::string plaintext = "plan: 1 to add\n" + std::string(70000, 'y');
  std::string sealed = RunAge({"-a", "-r", recipient_}, plaintext);
  auto back = AgeDecryptArmored(sealed, identity_);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, plaintext);

  auto wrong = AgeDecryptArmored(sealed, other_);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("not for this identity"), std::string::npos);
  // One character changed anywhere in the body: refused, never wrong text.
  for (size_t at : {size_t{60}, sealed.size() / 2, sealed.size() - 40}) {
    std::string changed = sealed;
    changed[at] = changed[at] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(AgeDecryptArmored(changed, identity_)) << at;
  }
  EXPECT_FALSE(AgeDecryptArmored("not age", identity_));
  EXPECT_FALSE(AgeDecryptArmored(sealed, "AGE-SECRET-KEY-1NOTAKEY"));
}

TEST_F(Age, RecipientsAreCheckedAndASecretKeyIsNeverTakenForOne) {
  EXPECT_TRUE(ParseAgeRecipient(recipient_));
  std::string bad = recipient_;
  bad.back() = bad.back() == 'q' ? 'p' : 'q';
  auto refused = ParseAgeRecipient(bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("checksum"), std::string::npos);
  std::string secret = identity_.substr(identity_.find("AGE-SECRET-KEY-1"));
  secret.pop_back();  // its newline
  auto secret_refused = ParseAgeRecipient(secret);
  ASSERT_FALSE(secret_refused);
  EXPECT_NE(secret_refused.error().message.find("secret key"), std::string::npos);
  EXPECT_FALSE(ParseAgeRecipient("age1"));
  EXPECT_FALSE(AgeEncryptArmored("x", "ssh-ed25519 AAAA"));
}

}  // namespace
}  // namespace berth::crypto
