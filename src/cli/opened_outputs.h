// `berth outputs ID --identity=KEY`: the sensitive outputs a runner sealed to the environment's
// log_recipient (sealed_value, an armored age file of the value's JSON) opened back into value.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"

namespace berth::cli {

// outputs: the "outputs" object of GET .../outputs?sensitive=true. An error names the output
// whose sealed value did not open with the identity.
Result<void> OpenSealedOutputs(nlohmann::json& outputs, std::string_view identity);

}  // namespace berth::cli
