// Sensitive outputs sealed on the runner: when the environment names a log_recipient, the value
// of every output TF marks sensitive leaves the Pod only as an armored age file to that
// recipient ("sealed_value", the value's JSON), so berthd keeps it without being able to read it.
// Other outputs stay in clear: berthd and the people who read the deployment act on them.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::runner {

// outputs_json: what `tofu output -json` prints. kInvalidArgument when it is not a JSON object.
Result<std::string> SealSensitiveOutputs(std::string_view outputs_json, std::string_view recipient);

}  // namespace berth::runner
