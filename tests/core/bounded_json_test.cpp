#include "core/bounded_json.h"

#include <gtest/gtest.h>

#include "core/pattern.h"
#include "core/schema.h"

namespace berth {
namespace {

std::string Nested(int depth) {
  auto n = static_cast<size_t>(depth);
  return std::string(n, '[') + std::string(n, ']');
}

TEST(BoundedJson, ParsesUpToTheBoundAndRefusesBeyondIt) {
  EXPECT_TRUE(ParseBoundedJson(Nested(kApiJson.depth)));
  auto deeper = ParseBoundedJson(Nested(kApiJson.depth + 1));
  ASSERT_FALSE(deeper);
  EXPECT_EQ(deeper.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(deeper.error().message.find("deeper than 64"), std::string::npos);
  EXPECT_TRUE(ParseBoundedJson(Nested(200), kTfDocument));
  EXPECT_TRUE(CheckBoundedJson(Nested(kTfDocument.depth), kTfDocument.depth));
  EXPECT_NE(CheckBoundedJson(Nested(kTfDocument.depth + 1), kTfDocument.depth)
                .error()
                .message.find("deeper than 256"),
            std::string::npos);
}

// Two bytes of body made some forty of memory once built: values are counted as they are read
// and a document of more than the bound is refused, whatever its size in bytes.
TEST(BoundedJson, ADocumentOfMoreValuesThanTheBoundIsRefusedBeforeItIsBuiltWhole) {
  auto many = [](size_t n, const std::string& value) {
    std::string text = "[";
    for (size_t i = 0; i < n; ++i) text += (i ? "," : "") + value;
    return text + "]";
  };
  // The array itself counts one.
  EXPECT_TRUE(ParseBoundedJson(many(kApiJson.values - 1, "{}")));
  for (const char* value : {"{}", "[]", "0", "null"}) {
    auto refused = ParseBoundedJson(many(kApiJson.values, value));
    ASSERT_FALSE(refused) << value;
    EXPECT_NE(refused.error().message.find("more than 100000 values"), std::string::npos)
        << refused.error().message;
  }
  EXPECT_FALSE(ParseBoundedJson(many(10, "1"), {.depth = 4, .values = 10}));
  EXPECT_TRUE(ParseBoundedJson(many(9, "1"), {.depth = 4, .values = 10}));
}

TEST(BoundedJson, AStreamedCheckTakesWhatAParseTakesAndBuildsNothing) {
  for (const char* text : {R"({"a":[1,{"b":"x"}]})", "[]", "\"s\"", "null"})
    EXPECT_TRUE(CheckBoundedJson(text, 8)) << text;
  for (const char* text : {"{\"a\":", "[1,]", "", "{} {}", "\"\\x\""})
    EXPECT_EQ(CheckBoundedJson(text, 8).error().message, "not valid JSON") << text;
  // Two million values: a parse stops at its bound; the check builds none of them.
  std::string huge = "[";
  for (int i = 0; i < 2'000'000; ++i) huge += "{},";
  huge.back() = ']';
  EXPECT_FALSE(ParseBoundedJson(huge, kTfDocument));
  EXPECT_TRUE(CheckBoundedJson(huge, 8));
}

TEST(BoundedJson, AMillionLevelsAreRefusedWithoutBuildingThem) {
  // Built whole, this document's recursive walks (dump, compare, validation) overflow the stack.
  std::string hostile = "{\"a\":" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  EXPECT_FALSE(ParseBoundedJson(hostile));
  EXPECT_TRUE(ParseBoundedJsonOrNull(hostile).is_null());
  std::string objects;
  for (int i = 0; i < 200'000; ++i) objects += "{\"k\":";
  objects += "1" + std::string(200'000, '}');
  EXPECT_FALSE(ParseBoundedJson(objects));
}

TEST(BoundedJson, NotJsonIsRefusedAsSuch) {
  auto bad = ParseBoundedJson("{\"a\":");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "not valid JSON");
  auto doc = ParseBoundedJson(R"({"a":[1,{"b":"[[["}]})");
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["a"][1]["b"], "[[[");
}

TEST(Pattern, MatchesWholeValuesOnly) {
  Pattern label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  EXPECT_TRUE(label.Matches("web-1"));
  EXPECT_FALSE(label.Matches("web-"));
  EXPECT_FALSE(label.Matches("x web"));
  EXPECT_FALSE(label.Matches(""));
}

TEST(Pattern, AValueOfMegabytesIsMatchedWithoutRecursion) {
  // std::regex recursed once per character here and overflowed the stack.
  std::string long_name(4 << 20, 'a');
  EXPECT_TRUE(Pattern("[a-z0-9]([-a-z0-9]*[a-z0-9])?").Matches(long_name));
  EXPECT_TRUE(Pattern("/.*").Matches("/" + long_name));
  Schema schema = Schema::String().Pattern("[a-z]([-a-z]*[a-z])?", "a name");
  FieldErrors errors;
  nlohmann::json value = long_name + "-";
  schema.Validate(value, "$.name", errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rule, "must be a name");
}

}  // namespace
}  // namespace berth
