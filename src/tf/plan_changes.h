// A plan's changes for people to read (the dashboard's change list): each resource and output
// that changes, its actions, and its attributes before and after, read from tofu's plan file
// without tofu. A value the plan marks sensitive, and every value of a sensitive output, is
// never in it: "(sensitive value)" stands in its place; a value known only after apply reads
// "(known after apply)".
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tf/plan_file_contents.h"

namespace berth::tf {

// Each value shown (already JSON text) goes through mask before it is kept: the runner's
// masker, so that a secret variable's value is "***" here as in the log.
using TextMask = std::function<std::string(std::string_view)>;

// {"resource_changes": [{"address", "actions", "attributes": [{"name", "before", "after",
// "sensitive", "unknown"}]}], "output_changes": [...]}: before and after are JSON text (absent
// when there is no value), attributes only those that differ, unless the object is created or
// deleted. Errors as ReadPlanFileContents.
Result<nlohmann::json> ReadPlanChanges(std::string_view plan_file, const TextMask& mask);
// The same, of a plan file read already; kInvalidArgument when a value or path is malformed.
Result<nlohmann::json> DescribePlanChanges(const PlanFileContents& contents, const TextMask& mask);

}  // namespace berth::tf
