// https://opentofu.org/docs/internals/machine-readable-ui/ ("outputs" messages).
#include "tf/apply_events.h"

#include "core/bounded_json.h"

namespace berth::tf {

std::optional<nlohmann::json> PlainOutputsFromEvents(std::string_view events) {
  std::optional<nlohmann::json> outputs;
  while (!events.empty()) {
    size_t end = events.find('\n');
    std::string_view line = events.substr(0, end);
    events.remove_prefix(end == std::string_view::npos ? events.size() : end + 1);
    // Only the outputs events are parsed: a large apply writes one event per resource.
    if (line.find("\"type\":\"outputs\"") == std::string_view::npos) continue;
    auto event = ParseBoundedJson(line, kTfDocument);
    if (!event || !event->is_object() || (*event)["type"] != "outputs") return std::nullopt;
    if (!event->contains("outputs") || !(*event)["outputs"].is_object()) return std::nullopt;
    outputs = std::move((*event)["outputs"]);
  }
  if (!outputs) return std::nullopt;
  for (const auto& [name, output] : outputs->items()) {
    if (!output.is_object() || output.value("sensitive", nlohmann::json()) != false ||
        !output.contains("value"))
      return std::nullopt;
  }
  return outputs;
}

}  // namespace berth::tf
