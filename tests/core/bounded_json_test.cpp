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
  EXPECT_TRUE(ParseBoundedJson(Nested(kMaxJsonDepth)));
  auto deeper = ParseBoundedJson(Nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(deeper);
  EXPECT_EQ(deeper.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(deeper.error().message.find("deeper than 64"), std::string::npos);
  EXPECT_TRUE(ParseBoundedJson(Nested(200), kMaxTfDocumentDepth));
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
