// Schema validation and description.
#include "core/schema.h"

#include <algorithm>
#include <cmath>

#include "core/bounded_json.h"
#include "core/pattern.h"

namespace berth {

using nlohmann::json;

Field Required(std::string name, Schema schema) {
  return Field{std::move(name), std::make_shared<const Schema>(std::move(schema)), true};
}
Field Optional(std::string name, Schema schema) {
  return Field{std::move(name), std::make_shared<const Schema>(std::move(schema)), false};
}

size_t CodePoints(std::string_view utf8) {
  // Every byte but a continuation byte (10xxxxxx) starts a code point.
  return static_cast<size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

bool IsBlank(std::string_view utf8) {
  for (size_t at = 0; at < utf8.size();) {
    auto byte = static_cast<unsigned char>(utf8[at]);
    int length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
    char32_t c = length == 1 ? byte : byte & (0x7FU >> length);
    for (int i = 1; i < length && at + static_cast<size_t>(i) < utf8.size(); ++i)
      c = (c << 6) | (static_cast<unsigned char>(utf8[at + static_cast<size_t>(i)]) & 0x3FU);
    at += static_cast<size_t>(length);
    bool space = (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 ||
                 (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
                 c == 0x205F || c == 0x3000 || c == 0xFEFF;
    if (!space) return false;
  }
  return true;
}

std::optional<int64_t> AsWholeNumber(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_number_float()) return std::nullopt;
  double d = value.get<double>();
  if (std::trunc(d) != d || std::fabs(d) >= 9.0e15) return std::nullopt;
  return static_cast<int64_t>(d);
}

void AllowNull(json& schema) {
  if (schema.contains("enum")) schema["enum"].push_back(nullptr);
  if (schema.contains("type") && schema["type"].is_string())
    schema["type"] = json::array({schema["type"], "null"});
}

std::string JoinPath(const std::string& path, const std::string& field) {
  return path + "." + field;
}

Schema Schema::Object(std::vector<Field> fields) {
  Schema s(Kind::kObject);
  s.fields_ = std::move(fields);
  return s;
}

Schema Schema::ArrayOf(Schema items) {
  Schema s(Kind::kArray);
  s.items_ = std::make_shared<const Schema>(std::move(items));
  return s;
}

Schema& Schema::Doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

Schema& Schema::Pattern(const std::string& regex, const std::string& description) {
  auto re = std::make_shared<berth::Pattern>(regex);
  patterns_.push_back(regex);
  std::string rule = "must be " + description;
  checks_.push_back([re, rule](const json& v) -> std::optional<std::string> {
    if (v.is_string() && re->Matches(v.get<std::string>())) return std::nullopt;
    return rule;
  });
  rules_ += (rules_.empty() ? "" : "; ") + description;
  return *this;
}

Schema& Schema::OneOf(std::vector<std::string> values) {
  one_of_ = std::move(values);
  return *this;
}

Schema& Schema::Range(int64_t min, int64_t max) {
  range_ = {min, max};
  std::string rule = "must be from " + std::to_string(min) + " to " + std::to_string(max);
  checks_.push_back([min, max, rule](const json& v) -> std::optional<std::string> {
    auto n = v.get<int64_t>();
    if (n < min || n > max) return rule;
    return std::nullopt;
  });
  rules_ += (rules_.empty() ? "" : "; ") + std::to_string(min) + " to " + std::to_string(max);
  return *this;
}

Schema& Schema::MaxLength(size_t n) {
  max_length_ = n;
  std::string rule = "must be at most " + std::to_string(n) + " characters";
  checks_.push_back([n, rule](const json& v) -> std::optional<std::string> {
    if (CodePoints(v.get_ref<const std::string&>()) > n) return rule;
    return std::nullopt;
  });
  rules_ +=
      (rules_.empty() ? "" : "; ") + std::string("at most ") + std::to_string(n) + " characters";
  return *this;
}

Schema& Schema::Require(Check check) {
  checks_.push_back(std::move(check));
  return *this;
}

Schema& Schema::JsonSchema(const json& form) {
  json_schema_.update(form);
  return *this;
}

json Schema::ToJsonSchema() const {
  json out = json::object();
  switch (kind_) {
    case Kind::kString:
      out["type"] = "string";
      break;
    case Kind::kBool:
      out["type"] = "boolean";
      break;
    case Kind::kInteger:
      out["type"] = "integer";
      break;
    case Kind::kFreeObject:
    case Kind::kObjectOrJsonString:
      out["type"] = "object";
      break;
    case Kind::kArray:
      out["type"] = "array";
      out["items"] = items_->ToJsonSchema();
      break;
    case Kind::kObject: {
      out["type"] = "object";
      json properties = json::object();
      json required = json::array();
      for (const auto& field : fields_) {
        json property = field.schema->ToJsonSchema();
        if (field.required) {
          required.push_back(field.name);
        } else {
          AllowNull(property);
        }
        properties[field.name] = std::move(property);
      }
      out["properties"] = std::move(properties);
      if (!required.empty()) out["required"] = std::move(required);
      out["additionalProperties"] = false;
      break;
    }
  }
  if (!doc_.empty()) out["description"] = doc_;
  if (!one_of_.empty()) out["enum"] = one_of_;
  if (max_length_) out["maxLength"] = *max_length_;
  if (range_) {
    out["minimum"] = range_->first;
    out["maximum"] = range_->second;
  }
  // berthd matches a pattern against the whole value; JSON Schema finds it anywhere.
  for (const auto& regex : patterns_) {
    json anchored = "^(?:" + regex + ")$";
    if (patterns_.size() == 1) {
      out["pattern"] = anchored;
    } else {
      out["allOf"].push_back({{"pattern", anchored}});
    }
  }
  out.update(json_schema_);
  return out;
}

std::string Schema::Summary() const {
  std::string type;
  switch (kind_) {
    case Kind::kString:
      type = "string";
      break;
    case Kind::kBool:
      type = "boolean";
      break;
    case Kind::kInteger:
      type = "integer";
      break;
    case Kind::kObject:
      type = "object";
      break;
    case Kind::kArray:
      type = "array of " + items_->Summary();
      break;
    case Kind::kFreeObject:
      type = "object";
      break;
    case Kind::kObjectOrJsonString:
      type = "object, or a string of JSON";
      break;
  }
  if (!one_of_.empty()) {
    type += ", one of:";
    for (size_t i = 0; i < one_of_.size(); ++i) type += (i ? ", " : " ") + one_of_[i];
  }
  if (!rules_.empty()) type += ", " + rules_;
  return type;
}

void Schema::Validate(json& value, const std::string& path, FieldErrors& errors) const {
  auto fail = [&](std::string rule) { errors.push_back({path, std::move(rule)}); };
  switch (kind_) {
    case Kind::kString:
      if (!value.is_string()) return fail("must be a string");
      break;
    case Kind::kBool:
      if (!value.is_boolean()) return fail("must be true or false");
      break;
    case Kind::kInteger:
      // JSON Schema counts 5.0 as an integer, so a client may send one: it is read as 5.
      if (auto whole = AsWholeNumber(value)) value = *whole;
      if (!value.is_number_integer()) return fail("must be a whole number");
      break;
    case Kind::kFreeObject:
      if (!value.is_object()) return fail("must be an object");
      break;
    case Kind::kObjectOrJsonString:
      if (value.is_string()) {
        auto parsed = ParseBoundedJson(value.get<std::string>());
        if (!parsed || !parsed->is_object()) {
          return fail("must be an object, or a string holding a JSON object");
        }
        value = std::move(*parsed);
      }
      if (!value.is_object()) return fail("must be an object, or a string holding a JSON object");
      break;
    case Kind::kArray:
      if (!value.is_array()) return fail("must be an array");
      for (size_t i = 0; i < value.size(); ++i) {
        items_->Validate(value[i], path + "[" + std::to_string(i) + "]", errors);
      }
      break;
    case Kind::kObject: {
      if (!value.is_object()) return fail("must be an object");
      for (const auto& item : value.items()) {
        const std::string& name = item.key();
        bool known = std::any_of(fields_.begin(), fields_.end(),
                                 [&name](const Field& f) { return f.name == name; });
        if (!known) errors.push_back({JoinPath(path, name), "is not a known field"});
      }
      for (const auto& field : fields_) {
        auto it = value.find(field.name);
        if (it == value.end() || it->is_null()) {
          if (field.required) errors.push_back({JoinPath(path, field.name), "is required"});
          if (it != value.end()) value.erase(it);  // null means absent
          continue;
        }
        field.schema->Validate(*it, JoinPath(path, field.name), errors);
      }
      break;
    }
  }
  if (!one_of_.empty()) {
    const auto& s = value.get<std::string>();
    if (std::find(one_of_.begin(), one_of_.end(), s) == one_of_.end()) {
      std::string rule = "must be one of:";
      for (size_t i = 0; i < one_of_.size(); ++i) rule += (i ? ", " : " ") + one_of_[i];
      return fail(rule);
    }
  }
  for (const auto& check : checks_) {
    if (auto broken = check(value)) return fail(*broken);
  }
}

std::string DescribeFields(const Schema& schema, const std::string& prefix) {
  std::string out;
  for (const auto& field : schema.Fields()) {
    std::string path = prefix.empty() ? field.name : prefix + "." + field.name;
    out += "| `" + path + "` | " + field.schema->Summary() + " | " +
           (field.required ? "yes" : "no") + " | " + field.schema->GetDoc() + " |\n";
    if (field.schema->GetKind() == Schema::Kind::kObject) {
      out += DescribeFields(*field.schema, path);
    }
  }
  return out;
}

}  // namespace berth
