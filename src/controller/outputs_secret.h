// What a Terraform object's outputs Secret holds, from the outputs a runner sent (`output
// -json`'s shape). The runner shares its Pod with the module, so the document is hostile: it is
// parsed bounded, and anything not of the expected shape is refused by name, never thrown on.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth::controller {

// The Secret's data: each output (only those in wanted, when it names any) as base64 of its
// value, a string as it is and anything else as its JSON.
Result<nlohmann::json> OutputsSecretData(std::string_view outputs_json,
                                         const nlohmann::json& wanted);

}  // namespace berth::controller
