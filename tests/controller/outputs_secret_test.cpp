// The outputs Secret's data from what a runner sent: every output base64 of its value, only
// the wanted ones, and a hostile document refused by name, never thrown on.
#include "controller/outputs_secret.h"

#include <gtest/gtest.h>

#include <string>

#include "core/base64.h"

namespace berth::controller {
namespace {

using nlohmann::json;

std::string Decoded(const json& data, const std::string& name) {
  auto decoded = Base64Decode(data.at(name).get<std::string>());
  return decoded ? *decoded : "(not base64)";
}

TEST(OutputsSecret, EachOutputIsItsValueAStringAsItIsAnythingElseAsJson) {
  auto data =
      OutputsSecretData(R"({"url":{"sensitive":false,"type":"string","value":"https://x"},)"
                        R"("ports":{"sensitive":false,"type":["list","number"],"value":[80,443]}})",
                        json::array());
  ASSERT_TRUE(data) << data.error().ToString();
  EXPECT_EQ(Decoded(*data, "url"), "https://x");
  EXPECT_EQ(Decoded(*data, "ports"), "[80,443]");
  auto only =
      OutputsSecretData(R"({"url":{"value":"u"},"ports":{"value":[1]}})", json::array({"url"}));
  ASSERT_TRUE(only);
  EXPECT_EQ(only->size(), 1u);
  EXPECT_TRUE(only->contains("url"));
}

// What a module that replaced its runner could send: another shape at each level, too deep, too
// many values. Each is an error that says so, where indexing them threw (and crash-looped the
// controller).
TEST(OutputsSecret, AHostileDocumentIsRefusedByNameNeverThrownOn) {
  std::string deep = std::string(300, '[') + std::string(300, ']');
  std::string many = "{\"a\":{\"value\":[";
  for (int i = 0; i < 1'100'000; ++i) many += i ? ",0" : "0";
  many += "]}}";
  for (const std::string& hostile :
       {std::string("[1,2]"), std::string("\"outputs\""), std::string("{\"a\":[1]}"),
        std::string("{\"a\":\"v\"}"), std::string("{\"a\":{\"sensitive\":true}}"),
        std::string("{\"a\":"), deep, many}) {
    Result<json> data = MakeError(ErrorKind::kInternal, "not called");
    EXPECT_NO_THROW(data = OutputsSecretData(hostile, json::array())) << hostile.substr(0, 40);
    ASSERT_FALSE(data) << hostile.substr(0, 40);
    EXPECT_EQ(data.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(data.error().message.find("the runner's outputs are refused"), std::string::npos)
        << data.error().message;
  }
}

}  // namespace
}  // namespace berth::controller
