#include "controller/terraform_object.h"

#include <algorithm>

#include "core/duration.h"

namespace berth::controller {

using nlohmann::json;

std::chrono::seconds SpecDuration(const json& spec, const char* key,
                                  std::chrono::seconds fallback) {
  if (!spec.is_object() || !spec.contains(key) || !spec[key].is_string()) return fallback;
  auto parsed = ParseDuration(spec[key].get<std::string>());
  if (!parsed) return fallback;
  return std::max(std::chrono::seconds(1),
                  std::chrono::duration_cast<std::chrono::seconds>(*parsed));
}

std::string ObjectKey(const json& object) {
  const json metadata = object.value("metadata", json::object());
  return metadata.value("namespace", "") + "/" + metadata.value("name", "");
}

}  // namespace berth::controller
