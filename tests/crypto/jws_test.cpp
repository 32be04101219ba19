// Run tokens: EdDSA JWS that verify only untouched, with the right key, audience and time, and
// refuse every header but berth's own (no "alg":"none", no key hints).
#include "crypto/jws.h"

#include <gtest/gtest.h>

#include "core/base64.h"

namespace berth::crypto {
namespace {

std::string B64(std::string_view s) { return Base64Encode(s, Base64Alphabet::kUrlNoPadding); }

class RunTokens : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signer = Ed25519Signer::Generate();
    ASSERT_TRUE(signer);
    signer_.emplace(std::move(*signer));
    auto token = MintRunToken({"run-1", "berth-gateway", 1000, 2000, "t1"}, *signer_);
    ASSERT_TRUE(token);
    token_ = *token;
  }
  std::optional<Ed25519Signer> signer_;
  std::string token_;
};

TEST_F(RunTokens, VerifyWithTheirKeyAudienceAndTime) {
  auto token = VerifyRunToken(token_, signer_->PublicKey(), "berth-gateway", 1500);
  ASSERT_TRUE(token) << token.error().ToString();
  EXPECT_EQ(token->run_id, "run-1");
  EXPECT_EQ(token->expires_at, 2000);
  EXPECT_EQ(token->id, "t1");
}

TEST_F(RunTokens, ASeedGivesTheSameKeyBack) {
  auto again = Ed25519Signer::FromSeed(signer_->Seed());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->PublicKey(), signer_->PublicKey());
  EXPECT_TRUE(VerifyRunToken(token_, again->PublicKey(), "berth-gateway", 1500));
}

struct Refusal {
  std::string name;
  std::function<std::string(const std::string&)> change;
  std::string message;
};

class RunTokenRefusals : public RunTokens, public ::testing::WithParamInterface<Refusal> {};

TEST_P(RunTokenRefusals, AreUnauthenticatedWithTheReason) {
  auto token =
      VerifyRunToken(GetParam().change(token_), signer_->PublicKey(), "berth-gateway", 1500);
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().kind, ErrorKind::kUnauthenticated);
  EXPECT_NE(token.error().message.find(GetParam().message), std::string::npos)
      << token.error().message;
}

std::string Part(const std::string& token, int index) {
  size_t a = token.find('.'), b = token.find('.', a + 1);
  if (index == 0) return token.substr(0, a);
  if (index == 1) return token.substr(a + 1, b - a - 1);
  return token.substr(b + 1);
}

INSTANTIATE_TEST_SUITE_P(
    Tokens, RunTokenRefusals,
    ::testing::Values(
        Refusal{"other_run",
                [](const std::string& token) {
                  return Part(token, 0) + "." +
                         B64(R"({"sub":"run-2","aud":"berth-gateway","iat":1000,"exp":2000})") +
                         "." + Part(token, 2);
                },
                "signature does not verify"},
        Refusal{"alg_none",
                [](const std::string& token) {
                  return B64(R"({"alg":"none","typ":"JWT"})") + "." + Part(token, 1) + ".";
                },
                "header must be"},
        Refusal{"alg_none_signed",
                [](const std::string& token) {
                  return B64(R"({"alg":"none","typ":"JWT"})") + "." + Part(token, 1) + "." +
                         Part(token, 2);
                },
                "header must be"},
        Refusal{"key_hint",
                [](const std::string& token) {
                  return B64(R"({"alg":"EdDSA","typ":"JWT","jwk":{}})") + "." + Part(token, 1) +
                         "." + Part(token, 2);
                },
                "header must be"},
        Refusal{"two_parts",
                [](const std::string& token) { return Part(token, 0) + "." + Part(token, 1); },
                "three base64url parts"},
        Refusal{"padding", [](const std::string& token) { return token + "="; }, "not base64url"},
        Refusal{"short_signature",
                [](const std::string& token) {
                  return Part(token, 0) + "." + Part(token, 1) + ".AAAA";
                },
                "not 64 bytes"}),
    [](const auto& row) { return row.param.name; });

TEST_F(RunTokens, RefuseAnotherAudienceAnExpiryAndAnotherKey) {
  auto audience = VerifyRunToken(token_, signer_->PublicKey(), "berth-state", 1500);
  ASSERT_FALSE(audience);
  EXPECT_NE(audience.error().message.find("another audience"), std::string::npos);
  auto expired = VerifyRunToken(token_, signer_->PublicKey(), "berth-gateway", 2000);
  ASSERT_FALSE(expired);
  EXPECT_NE(expired.error().message.find("expired"), std::string::npos);
  auto other = Ed25519Signer::Generate();
  ASSERT_TRUE(other);
  EXPECT_FALSE(VerifyRunToken(token_, other->PublicKey(), "berth-gateway", 1500));
}

// The verifier remembers a signature's verdict, never a token's standing: a remembered token
// is refused once expired or for another audience, and one with another's signature (or for
// another key) is refused however often it comes.
TEST_F(RunTokens, AVerifierRemembersSignaturesNotExpiryOrAudience) {
  RunTokenVerifier verifier(signer_->PublicKey());
  for (int call = 0; call < 2; ++call) {
    auto token = verifier.Verify(token_, "berth-gateway", 1500);
    ASSERT_TRUE(token) << token.error().ToString();
    EXPECT_EQ(token->run_id, "run-1");
  }
  auto expired = verifier.Verify(token_, "berth-gateway", 2000);
  ASSERT_FALSE(expired);
  EXPECT_NE(expired.error().message.find("expired"), std::string::npos);
  auto audience = verifier.Verify(token_, "berth-state", 1500);
  ASSERT_FALSE(audience);
  EXPECT_NE(audience.error().message.find("another audience"), std::string::npos);

  std::string forged = Part(token_, 0) + "." +
                       B64(R"({"sub":"run-2","aud":"berth-gateway","iat":1000,"exp":2000})") + "." +
                       Part(token_, 2);
  for (int call = 0; call < 2; ++call) {
    auto refused = verifier.Verify(forged, "berth-gateway", 1500);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, ErrorKind::kUnauthenticated);
  }
  // A remembered token with a byte of its signature changed is no remembered token.
  std::string flipped = token_;
  char& changed = flipped[flipped.size() - 10];
  changed = changed == 'A' ? 'B' : 'A';
  EXPECT_FALSE(verifier.Verify(flipped, "berth-gateway", 1500));
  auto other = Ed25519Signer::Generate();
  ASSERT_TRUE(other);
  RunTokenVerifier other_key(other->PublicKey());
  EXPECT_FALSE(other_key.Verify(token_, "berth-gateway", 1500));
}

}  // namespace
}  // namespace berth::crypto
