// A small JSON schema in code: what fields an object has, their types and rules. Validation
// collects every error with its JSON path ("$.runner_configuration.cluster.name") and the rule
// it broke, rejects unknown fields, and normalises values where the contract allows two
// spellings (an object given as a JSON string). The same description renders the docs and the
// JSON Schema of docs/openapi.json.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace berth {

class Schema;

struct Field {
  std::string name;
  std::shared_ptr<const Schema> schema;
  bool required = false;
};

class Schema {
 public:
  enum class Kind { kString, kBool, kInteger, kObject, kArray, kFreeObject, kObjectOrJsonString };
  // A check returns the rule broken, or nothing when the value is fine.
  using Check = std::function<std::optional<std::string>(const nlohmann::json&)>;

  static Schema String() { return Schema(Kind::kString); }
  static Schema Bool() { return Schema(Kind::kBool); }
  static Schema Integer() { return Schema(Kind::kInteger); }
  static Schema Object(std::vector<Field> fields);
  static Schema ArrayOf(Schema items);
  // Any JSON object (its shape is checked elsewhere, for example a Pod template).
  static Schema FreeObject() { return Schema(Kind::kFreeObject); }
  // An object, or a string holding one as JSON; validation replaces the string by the object.
  static Schema ObjectOrJsonString() { return Schema(Kind::kObjectOrJsonString); }

  Schema& Doc(std::string text);
  Schema& Pattern(const std::string& regex, const std::string& description);
  Schema& OneOf(std::vector<std::string> values);
  Schema& Range(int64_t min, int64_t max);
  // At most n characters (Unicode code points, as JSON Schema's maxLength counts them).
  Schema& MaxLength(size_t n);
  // A rule in code. JSON Schema cannot run it: JsonSchema() states what it means there.
  Schema& Require(Check check);
  // Merged over the JSON Schema this schema renders: the JSON Schema form of its Require()
  // checks, so that what the document calls valid, berthd accepts.
  Schema& JsonSchema(const nlohmann::json& form);

  Kind GetKind() const { return kind_; }
  const std::vector<Field>& Fields() const { return fields_; }
  const std::string& GetDoc() const { return doc_; }
  // "string, one of: a, b" and the like, for docs and errors.
  std::string Summary() const;

  // Validates value (normalising it in place) and appends every error found.
  void Validate(nlohmann::json& value, const std::string& path, FieldErrors& errors) const;

  // The same rules as JSON Schema (OpenAPI 3.1): an object's optional fields also take null,
  // which berthd reads as absent.
  nlohmann::json ToJsonSchema() const;

 private:
  explicit Schema(Kind kind) : kind_(kind) {}
  Kind kind_;
  std::vector<Field> fields_;
  std::shared_ptr<const Schema> items_;
  std::vector<Check> checks_;
  std::vector<std::string> one_of_;
  std::vector<std::string> patterns_;  // whole-value regexes
  std::optional<std::pair<int64_t, int64_t>> range_;
  std::optional<size_t> max_length_;
  nlohmann::json json_schema_ = nlohmann::json::object();
  std::string doc_;
  std::string rules_;  // human summary of the checks
};

// Field helpers: Required("name", Schema::String()), Optional(...).
Field Required(std::string name, Schema schema);
Field Optional(std::string name, Schema schema);

// Markdown rows "| path | type | required | description |" for every field below prefix.
std::string DescribeFields(const Schema& schema, const std::string& prefix = "");

// How many characters JSON counts in a UTF-8 string: its code points.
size_t CodePoints(std::string_view utf8);
// Whether utf8 holds nothing but white space as JSON Schema's patterns (ECMA-262 \s) count it:
// a "not blank" rule is then the pattern "\\S" exactly.
bool IsBlank(std::string_view utf8);
// A JSON number as JSON Schema's integer reads it (5 and 5.0 alike); nullopt for anything else.
std::optional<int64_t> AsWholeNumber(const nlohmann::json& value);

// A JSON Schema that also takes null (an optional field's, which berthd reads as absent).
void AllowNull(nlohmann::json& schema);

// "$.a.b" + "c" -> "$.a.b.c"; indices as [n].
std::string JoinPath(const std::string& path, const std::string& field);

}  // namespace berth
