// A plan's change list (tf/plan_changes.h) as it crosses from a runner to berthd: the runner
// shares its sandbox with the module, so berthd keeps only what this parser typed.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth {

// {"resource_changes": [...], "output_changes": [...]}, each change {"address", "actions",
// "attributes": [{"name", "before"?, "after"?, "sensitive", "unknown"}], "importing"?},
// rebuilt field by field; kInvalidArgument naming the first thing out of shape.
Result<nlohmann::json> ParseChangeList(std::string_view text);

}  // namespace berth
