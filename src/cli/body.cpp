// YAML through yaml-cpp; values keep their YAML types (quoted strings stay strings).
#include "cli/body.h"

#include <yaml-cpp/yaml.h>

#include "sys/files.h"

namespace berth::cli {
namespace {

using nlohmann::json;

json FromYaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = FromYaml(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(FromYaml(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted: a string whatever it looks like
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      json number = json::parse(s, nullptr, false);
      if (!number.is_discarded() && number.is_number()) return number;
      return s;
    }
    default:
      return nullptr;
  }
}

void ToYaml(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, item] : v.items()) {
      out << YAML::Key << k << YAML::Value;
      ToYaml(out, item);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : v) ToYaml(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    out << v.get<std::string>();
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << v.dump();
  }
}

// "@file" reads the file; anything else is the text itself.
Result<std::string> TextOrFile(const std::string& value, const std::string& flag) {
  if (!value.starts_with("@")) return value;
  auto text = sys::ReadFile(value.substr(1));
  if (!text) return MakeError(ErrorKind::kInvalidArgument, flag + ": " + text.error().ToString());
  return *text;
}

void Merge(json& target, const json& patch) {
  if (!patch.is_object() || !target.is_object()) {
    target = patch;
    return;
  }
  for (const auto& [k, v] : patch.items()) Merge(target[k], v);
}

}  // namespace

Result<json> YamlToJson(const std::string& text) {
  try {
    return Ok(FromYaml(YAML::Load(text)));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorKind::kInvalidArgument,
                     "invalid YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                         std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

std::string JsonToYaml(const json& value) {
  YAML::Emitter out;
  ToYaml(out, value);
  return std::string(out.c_str()) + "\n";
}

Result<json> BuildBody(const BodyFlags& flags) {
  json body = json::object();
  std::vector<std::pair<std::string, std::string>> yaml;  // (text or @file, its flag)
  if (!flags.file.empty()) yaml.emplace_back("@" + flags.file, "-f");
  for (const auto& y : flags.set_yaml) yaml.emplace_back(y, "--set-yaml");
  for (const auto& [y, flag] : yaml) {
    auto text = TextOrFile(y, flag);
    if (!text) return text.error();
    auto doc = YamlToJson(*text);  // JSON is YAML too
    if (!doc) return MakeError(ErrorKind::kInvalidArgument, flag + ": " + doc.error().message);
    if (!doc->is_object())
      return MakeError(ErrorKind::kInvalidArgument, flag + ": must be a mapping");
    Merge(body, *doc);
  }
  for (const auto& j : flags.set_json) {
    auto text = TextOrFile(j, "--set-json");
    if (!text) return text.error();
    json doc = json::parse(*text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      return MakeError(ErrorKind::kInvalidArgument, "--set-json: must be a JSON object");
    }
    Merge(body, doc);
  }
  for (const auto& s : flags.set) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return MakeError(ErrorKind::kInvalidArgument,
                       "--set: must be key.path=value, not \"" + s + "\"");
    }
    std::string key = s.substr(0, eq);
    std::string raw = s.substr(eq + 1);
    // Label keys hold dots and slashes ("berth.dev/runner-spec.kubernetes_image") and label
    // values are strings: after "labels." the rest is one key, its value taken as written.
    if (key.starts_with("labels.") && key.size() > 7) {
      body["labels"][key.substr(7)] = raw;
      continue;
    }
    std::string path;
    for (char c : key) {
      path += c == '.' ? "/" : c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    }
    path.insert(path.begin(), '/');
    json value = json::parse(raw, nullptr, false);
    if (value.is_discarded() || value.is_object() || value.is_array()) value = raw;
    body[json::json_pointer(path)] = value;
  }
  return Ok(std::move(body));
}

}  // namespace berth::cli
