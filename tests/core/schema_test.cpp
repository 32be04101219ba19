// A Schema validates, and renders the same rules as JSON Schema for docs/openapi.json.
#include "core/schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace berth {
namespace {

using nlohmann::json;

Schema Sample() {
  return Schema::Object({
      Required("name", std::move(Schema::String().Pattern("[a-z]+", "lowercase letters"))),
      Optional("size", std::move(Schema::Integer().Range(1, 9))),
      Optional("kind", std::move(Schema::String().OneOf({"a", "b"}))),
      Optional("note", std::move(Schema::String().MaxLength(4))),
      Optional("key", std::move(Schema::String()
                                    .Require([](const json& v) -> std::optional<std::string> {
                                      if (v.get<std::string>() == "ok") return std::nullopt;
                                      return "must be ok";
                                    })
                                    .JsonSchema({{"const", "ok"}}))),
  });
}

FieldErrors Validate(json value) {
  FieldErrors errors;
  Sample().Validate(value, "$", errors);
  return errors;
}

TEST(Schema, MaxLengthCountsCharactersNotBytes) {
  EXPECT_TRUE(Validate({{"name", "x"}, {"note", "\u00e9\u00e9\u00e9\u00e9"}}).empty())
      << "four characters in eight bytes";
  auto errors = Validate({{"name", "x"}, {"note", "\u00e9\u00e9\u00e9\u00e9\u00e9"}});
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].path, "$.note");
  EXPECT_EQ(CodePoints("a\u00e9\U0001F600"), 3U);
}

// "Not blank" is JSON Schema's pattern \S: Unicode spaces are blank too, anything else is not.
TEST(Schema, BlankIsWhatTheJsonSchemaPatternCallsWhiteSpace) {
  for (const char* blank : {"", " \t\r\n\f\v", "\u00a0", "\u2003\u3000", "\ufeff\u2029"})
    EXPECT_TRUE(IsBlank(blank)) << blank;
  for (const char* text : {"x", " x ", "\u00e9", "\u200b", "\U0001F600"})
    EXPECT_FALSE(IsBlank(text)) << text;
}

TEST(Schema, AWholeNumberWrittenWithAFractionIsAnInteger) {
  json value = {{"name", "x"}, {"size", 5.0}};
  FieldErrors errors;
  Sample().Validate(value, "$", errors);
  EXPECT_TRUE(errors.empty()) << "JSON Schema's integer takes 5.0";
  EXPECT_TRUE(value["size"].is_number_integer()) << "and berthd reads it as 5";
  EXPECT_EQ(value["size"], 5);
  auto refused = Validate({{"name", "x"}, {"size", 5.5}});
  ASSERT_EQ(refused.size(), 1U);
  EXPECT_EQ(refused[0].rule, "must be a whole number");
}

TEST(Schema, RendersItsRulesAsJsonSchema) {
  json rendered = Sample().ToJsonSchema();
  EXPECT_EQ(rendered["type"], "object");
  EXPECT_EQ(rendered["additionalProperties"], false) << "unknown fields are refused";
  EXPECT_EQ(rendered["required"], json{"name"});
  const json& p = rendered["properties"];
  EXPECT_EQ(p["name"]["type"], "string") << "a required field does not take null";
  EXPECT_EQ(p["name"]["pattern"], "^(?:[a-z]+)$") << "berthd matches the whole value";
  EXPECT_EQ(p["size"]["type"], (json{"integer", "null"})) << "null is absent for an optional";
  EXPECT_EQ(p["size"]["minimum"], 1);
  EXPECT_EQ(p["size"]["maximum"], 9);
  EXPECT_EQ(p["kind"]["enum"], (json{"a", "b", nullptr}));
  EXPECT_EQ(p["note"]["maxLength"], 4);
  EXPECT_EQ(p["key"]["const"], "ok") << "a Require() check states its JSON Schema form";
  // null is what an optional field's absence may be written as.
  EXPECT_TRUE(Validate({{"name", "x"}, {"size", nullptr}, {"kind", nullptr}}).empty());
}

}  // namespace
}  // namespace berth
