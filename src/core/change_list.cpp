#include "core/change_list.h"

#include <string>

#include "core/bounded_json.h"

namespace berth {
namespace {

using nlohmann::json;

Error OutOfShape(const std::string& path, const std::string& rule) {
  return InvalidFields("change list", {{path, rule}});
}

Result<json> Attribute(const json& in, const std::string& path) {
  if (!in.is_object()) return OutOfShape(path, "must be an object");
  if (!in.contains("name") || !in["name"].is_string())
    return OutOfShape(path + ".name", "must be a string");
  json out = {{"name", in["name"]}};
  for (const char* side : {"before", "after"}) {
    if (!in.contains(side)) continue;
    if (!in[side].is_string()) return OutOfShape(path + "." + side, "must be a string");
    out[side] = in[side];
  }
  for (const char* flag : {"sensitive", "unknown"}) {
    if (!in.contains(flag) || !in[flag].is_boolean())
      return OutOfShape(path + "." + flag, "must be true or false");
    out[flag] = in[flag];
  }
  return Ok(std::move(out));
}

Result<json> Change(const json& in, const std::string& path) {
  if (!in.is_object()) return OutOfShape(path, "must be an object");
  if (!in.contains("address") || !in["address"].is_string())
    return OutOfShape(path + ".address", "must be a string");
  if (!in.contains("actions") || !in["actions"].is_array() || in["actions"].empty())
    return OutOfShape(path + ".actions", "must be a list of actions");
  json out = {
      {"address", in["address"]}, {"actions", json::array()}, {"attributes", json::array()}};
  for (const json& action : in["actions"]) {
    if (!action.is_string()) return OutOfShape(path + ".actions", "must hold strings");
    out["actions"].push_back(action);
  }
  if (!in.contains("attributes") || !in["attributes"].is_array())
    return OutOfShape(path + ".attributes", "must be a list");
  for (size_t i = 0; i < in["attributes"].size(); ++i) {
    auto attribute =
        Attribute(in["attributes"][i], path + ".attributes[" + std::to_string(i) + "]");
    if (!attribute) return attribute.error();
    out["attributes"].push_back(std::move(*attribute));
  }
  if (in.contains("importing")) {
    if (!in["importing"].is_boolean())
      return OutOfShape(path + ".importing", "must be true or false");
    out["importing"] = in["importing"];
  }
  return Ok(std::move(out));
}

}  // namespace

Result<json> ParseChangeList(std::string_view text) {
  // A plan of thousands of resources lists a value for each of their attributes: TF's bounds.
  auto doc = ParseBoundedJson(text, kTfDocument);
  if (!doc) return doc.error();
  if (!doc->is_object()) return OutOfShape("$", "must be an object");
  json out = json::object();
  for (const char* list : {"resource_changes", "output_changes"}) {
    const std::string path = std::string("$.") + list;
    if (!doc->contains(list) || !(*doc)[list].is_array()) return OutOfShape(path, "must be a list");
    out[list] = json::array();
    for (size_t i = 0; i < (*doc)[list].size(); ++i) {
      auto change = Change((*doc)[list][i], path + "[" + std::to_string(i) + "]");
      if (!change) return change.error();
      out[list].push_back(std::move(*change));
    }
  }
  return Ok(std::move(out));
}

json WithoutValues(json change_list) {
  for (const char* list : {"resource_changes", "output_changes"}) {
    json* changes =
        change_list.is_object() && change_list.contains(list) ? &change_list[list] : nullptr;
    if (changes == nullptr || !changes->is_array()) continue;
    for (json& change : *changes) {
      json* attributes =
          change.is_object() && change.contains("attributes") ? &change["attributes"] : nullptr;
      if (attributes == nullptr || !attributes->is_array()) continue;
      for (json& attribute : *attributes) {
        if (!attribute.is_object()) continue;
        for (const char* side : {"before", "after"})
          if (attribute.contains(side)) attribute[side] = kHiddenValue;
      }
    }
  }
  return change_list;
}

}  // namespace berth
