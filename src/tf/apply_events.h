// Reading what an apply said in its machine-readable events (`-json-into=FILE`, one JSON
// object per line, OpenTofu's "Machine-readable UI" format): its outputs, so that a run needs
// no `output -json` (another TF process) when none of them is sensitive.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace berth::tf {

// The last "outputs" event's outputs ({name: {sensitive, type, value}}, the shape of
// `output -json`), when every output is non-sensitive: the events leave sensitive values out.
// Nullopt when there is no such event, a line is malformed, or an output is sensitive.
std::optional<nlohmann::json> PlainOutputsFromEvents(std::string_view events);

}  // namespace berth::tf
