// OpenTofu's encrypted state and plan files: a JSON envelope {"meta", "encrypted_data" (base64
// of what the method sealed), "encryption_version"}. berth's environments use the aes_gcm
// method with no associated data (runner/state_encryption.h), so the runner, which holds the
// key, opens its own plans without starting tofu.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::tf {

// The plaintext sealed by the aes_gcm method with key (32 bytes). kFailedPrecondition when data
// is not an envelope (a plaintext file); kInvalidArgument when it does not open with key.
Result<std::string> OpenAesGcmPayload(std::string_view data, std::string_view key);

}  // namespace berth::tf
