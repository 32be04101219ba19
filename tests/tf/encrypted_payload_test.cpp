// OpenTofu's encrypted payloads opened with the key, and everything else told apart: plaintext
// files are not payloads, a payload that does not open (key, tampering) is an error.
#include "tf/encrypted_payload.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "crypto/aes_gcm.h"

namespace berth::tf {
namespace {

const std::string kKey(32, 'K');

std::string Envelope(const std::string& sealed_base64) {
  return nlohmann::json{{"meta", {{"external.berth", "e30="}}},
                        {"encrypted_data", sealed_base64},
                        {"encryption_version", "v0"}}
      .dump();
}

TEST(EncryptedPayload, OpensWithItsKey) {
  auto opened = OpenAesGcmPayload(
      Envelope(Base64Encode(crypto::AesGcmSeal(kKey, "PK\x03\x04 plan", {}))), kKey);
  ASSERT_TRUE(opened) << opened.error().ToString();
  EXPECT_EQ(*opened, "PK\x03\x04 plan");
}

TEST(EncryptedPayload, PlaintextFilesAreNotPayloads) {
  for (const std::string& data :
       {std::string("PK\x03\x04..."), std::string("{\"version\": 4}"),
        std::string("{\"encrypted_data\": \"AA==\", \"encryption_version\": \"\"}"),
        std::string("{\"encrypted_data\": 5, \"encryption_version\": \"v0\"}"),
        std::string(100000, '[')}) {
    auto opened = OpenAesGcmPayload(data, kKey);
    ASSERT_FALSE(opened) << data.substr(0, 40);
    EXPECT_EQ(opened.error().kind, ErrorKind::kFailedPrecondition) << data.substr(0, 40);
  }
}

TEST(EncryptedPayload, APayloadThatDoesNotOpenIsAnError) {
  std::string sealed = crypto::AesGcmSeal(kKey, "plan", {});
  std::string tampered = sealed;
  tampered[14] = static_cast<char>(tampered[14] ^ 1);
  for (const auto& [data, key] : {std::pair{Envelope(Base64Encode(sealed)), std::string(32, 'L')},
                                  std::pair{Envelope(Base64Encode(tampered)), kKey},
                                  std::pair{Envelope(Base64Encode("short")), kKey},
                                  std::pair{Envelope("not base64!"), kKey}}) {
    auto opened = OpenAesGcmPayload(data, key);
    ASSERT_FALSE(opened);
    EXPECT_EQ(opened.error().kind, ErrorKind::kInvalidArgument) << opened.error().ToString();
  }
}

}  // namespace
}  // namespace berth::tf
