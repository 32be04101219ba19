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

// The same list with every attribute's before and after replaced by kHiddenValue: what a read
// token sees. A provider may mark an attribute sensitive in its schema alone, which the plan's
// own marks do not carry; rather than trust every provider's schema, values are for callers
// who could print them from a run anyway (scope deploy).
inline constexpr std::string_view kHiddenValue = "(hidden: values need scope deploy)";
nlohmann::json WithoutValues(nlohmann::json change_list);

}  // namespace berth
