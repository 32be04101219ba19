// Agent tokens: signed by one of the runner's keys (its key, or the next one while agents roll
// over), for the agent gateway, short-lived, within the clock skew; and the agent's key files
// as openssl writes and reads them.
#include "crypto/agent_token.h"

#include <gtest/gtest.h>

#include "core/ed25519_key.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::crypto {
namespace {

class AgentTokens : public ::testing::Test {
 protected:
  void SetUp() override {
    auto current = Ed25519Signer::Generate();
    auto next = Ed25519Signer::Generate();
    auto stranger = Ed25519Signer::Generate();
    ASSERT_TRUE(current && next && stranger);
    current_.emplace(std::move(*current));
    next_.emplace(std::move(*next));
    stranger_.emplace(std::move(*stranger));
  }
  std::string Mint(const Ed25519Signer& signer, int64_t iat, int64_t exp,
                   const std::string& jti = "0123456789abcdef") {
    return MintAgentToken({"acme", "agent-1", iat, exp, jti}, signer).value();
  }
  std::vector<std::string> Keys() const { return {current_->PublicKey(), next_->PublicKey()}; }
  std::optional<Ed25519Signer> current_, next_, stranger_;
};

TEST_F(AgentTokens, EitherKeyOfTheRunnerSignsThem) {
  for (const Ed25519Signer* signer : {&*current_, &*next_}) {
    auto token = VerifyAgentToken(Mint(*signer, 1000, 1120), Keys(), 1010);
    ASSERT_TRUE(token) << token.error().ToString();
    EXPECT_EQ(token->org, "acme");
    EXPECT_EQ(token->runner, "agent-1");
    EXPECT_EQ(token->id, "0123456789abcdef");
  }
  auto forged = VerifyAgentToken(Mint(*stranger_, 1000, 1120), Keys(), 1010);
  ASSERT_FALSE(forged);
  EXPECT_EQ(forged.error().kind, ErrorKind::kUnauthenticated);
  EXPECT_NE(forged.error().message.find("not signed by a key of the runner"), std::string::npos);
  // A run token (berthd's key, another audience) is no agent token.
  auto run_token =
      MintRunToken({"run-1", "berth-run", 1000, 1100, "t1", "acme/web/dev"}, *current_);
  ASSERT_TRUE(run_token);
  EXPECT_FALSE(VerifyAgentToken(*run_token, Keys(), 1010));
}

TEST_F(AgentTokens, TheyAreShortLivedWithinABoundedClockSkew) {
  auto refused = [&](const std::string& token, int64_t now, const std::string& why) {
    auto verified = VerifyAgentToken(token, Keys(), now);
    ASSERT_FALSE(verified) << why;
    EXPECT_NE(verified.error().message.find(why), std::string::npos) << verified.error().message;
  };
  refused(Mint(*current_, 1000, 1000 + kAgentTokenMaxLifetime + 1), 1010, "may live 300 s");
  refused(Mint(*current_, 1000, 1100), 1100 + kAgentClockSkew, "expired");
  refused(Mint(*current_, 2000, 2100), 2000 - kAgentClockSkew - 1, "in the future");
  refused(Mint(*current_, 1000, 1100, "short"), 1010, "jti must be");
  refused(Mint(*current_, 1100, 1000), 1010, "exp after iat");
  // Within the skew both ways.
  EXPECT_TRUE(VerifyAgentToken(Mint(*current_, 2000, 2100), Keys(), 2000 - kAgentClockSkew));
  EXPECT_TRUE(VerifyAgentToken(Mint(*current_, 1000, 1100), Keys(), 1100 + kAgentClockSkew - 1));
  // A token cut or changed in transit verifies no more.
  std::string token = Mint(*current_, 1000, 1100);
  token[token.size() / 2] = token[token.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(VerifyAgentToken(token, Keys(), 1010));
}

TEST(AgentKeys, OpensslKeysAreReadAndTheKeysWeWriteAreOpenssls) {
  auto dir = sys::TempDir::Create("agent-keys");
  ASSERT_TRUE(dir);
  auto key = dir->Path() / "agent.key";
  auto made = sys::RunToCompletion(
      {.argv = {"/usr/bin/openssl", "genpkey", "-algorithm", "ed25519", "-out", key.string()}});
  ASSERT_TRUE(made && made->exit_code == 0);
  auto pub =
      sys::RunToCompletion({.argv = {"/usr/bin/openssl", "pkey", "-in", key.string(), "-pubout"}});
  ASSERT_TRUE(pub && pub->exit_code == 0);
  auto seed = ParseEd25519PrivateKeyPem(sys::ReadFile(key).value());
  ASSERT_TRUE(seed) << seed.error().ToString();
  auto signer = Ed25519Signer::FromSeed(*seed);
  ASSERT_TRUE(signer);
  auto public_key = ParseEd25519PublicKeyPem(pub->output);
  ASSERT_TRUE(public_key) << pub->output;
  EXPECT_EQ(public_key->raw, signer->PublicKey());
  // Ours, read by openssl: the same public key.
  EXPECT_EQ(Ed25519PublicKeyPem(signer->PublicKey()), pub->output);
  auto ours = dir->Path() / "ours.key";
  ASSERT_TRUE(sys::WriteFileAtomic(ours, Ed25519PrivateKeyPem(signer->Seed())));
  auto again =
      sys::RunToCompletion({.argv = {"/usr/bin/openssl", "pkey", "-in", ours.string(), "-pubout"}});
  ASSERT_TRUE(again && again->exit_code == 0);
  EXPECT_EQ(again->output, pub->output);
  // A public key where a private one belongs, and a truncated one, are refused.
  EXPECT_FALSE(ParseEd25519PrivateKeyPem(pub->output));
  EXPECT_FALSE(ParseEd25519PrivateKeyPem(Ed25519PrivateKeyPem(signer->Seed().substr(0, 31))));
}

}  // namespace
}  // namespace berth::crypto
