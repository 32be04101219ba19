// Building a request body from the CLI's -f FILE (the whole object, YAML or JSON, as kubectl
// users write it), --set-yaml=@file, --set-json=JSON|@file and --set key.path=value flags,
// applied in that order (later ones win).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::cli {

// YAML (a mapping) to JSON; the error names the line and column.
Result<nlohmann::json> YamlToJson(const std::string& text);
// JSON to YAML for `-o yaml`.
std::string JsonToYaml(const nlohmann::json& value);

struct BodyFlags {
  std::string file;                   // -f: YAML or JSON (a mapping), from a file
  std::vector<std::string> set_yaml;  // YAML text, or @file
  std::vector<std::string> set_json;  // JSON text, or @file
  std::vector<std::string> set;       // key.path=value; value read as JSON if it parses,
                                      // but labels.KEY=VALUE is one key and a string
};

Result<nlohmann::json> BuildBody(const BodyFlags& flags);

}  // namespace berth::cli
