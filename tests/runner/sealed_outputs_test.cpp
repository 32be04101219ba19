// The outputs a runner uploads when its environment names a log_recipient: sensitive values
// only sealed, the rest as tofu printed them.
#include "runner/sealed_outputs.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crypto/age.h"

namespace berth::runner {
namespace {

using nlohmann::json;

// A key pair made for this test with age-keygen.
constexpr const char* kRecipient = "age1p8pw53vdmp7emlfd255x4jwsh46j0rpjd5zdwl7z56hv9r8zxqyqm7kg3x";
constexpr const char* kIdentity =
    "AGE-SECRET-KEY-1XY59DMU3ADACA60X4A4LQAHNM5YCH2XLXWVG29K484HY4JAYE28SDK30KJ";

TEST(SealedOutputs, SensitiveValuesLeaveOnlySealedToTheRecipient) {
  json printed = {
      {"password", {{"sensitive", true}, {"type", "string"}, {"value", "hunter2-secret"}}},
      {"nested", {{"sensitive", true}, {"type", json::array()}, {"value", {{"k", {1, 2}}}}}},
      {"url", {{"sensitive", false}, {"type", "string"}, {"value", "https://example.test"}}}};
  auto sealed = SealSensitiveOutputs(printed.dump(), kRecipient);
  ASSERT_TRUE(sealed) << sealed.error().ToString();
  EXPECT_EQ(sealed->find("hunter2-secret"), std::string::npos);
  json doc = json::parse(*sealed);
  EXPECT_EQ(doc["url"], printed["url"]);
  for (const char* name : {"password", "nested"}) {
    EXPECT_FALSE(doc[name].contains("value")) << name;
    EXPECT_EQ(doc[name]["type"], printed[name]["type"]) << name;
    auto opened =
        crypto::AgeDecryptArmored(doc[name]["sealed_value"].get<std::string>(), kIdentity);
    ASSERT_TRUE(opened) << opened.error().ToString();
    EXPECT_EQ(json::parse(*opened), printed[name]["value"]) << name;
  }
}

// What a hostile module could leave for `output -json` to print is refused, never sent in clear.
TEST(SealedOutputs, OutputsThatAreNotAJsonObjectAreRefused) {
  for (const char* text : {"", "[1,2]", "{\"a\":", "\"sensitive\""})
    EXPECT_FALSE(SealSensitiveOutputs(text, kRecipient)) << text;
  // A sensitive flag that is not a boolean is not "true": left as it is, never a crash.
  auto odd = SealSensitiveOutputs(R"({"p":{"sensitive":"yes","value":"x"},"q":7})", kRecipient);
  ASSERT_TRUE(odd);
  EXPECT_EQ(nlohmann::json::parse(*odd)["p"]["value"], "x");
  EXPECT_FALSE(
      SealSensitiveOutputs(R"({"p":{"sensitive":true,"value":"x"}})", "age1notarecipient"));
}

}  // namespace
}  // namespace berth::runner
