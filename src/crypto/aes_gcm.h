// AES-256-GCM with a random 12-byte nonce, laid out nonce | ciphertext | 16-byte tag: the
// layout of berthd's sealed values and of OpenTofu's aes_gcm method alike.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::crypto {

// key is 32 bytes. Aborts if the cipher cannot seal: nothing secret may be written in clear.
std::string AesGcmSeal(std::string_view key, std::string_view plaintext, std::string_view aad);
// kInvalidArgument when sealed is too short, altered, or of another key or aad.
Result<std::string> AesGcmOpen(std::string_view key, std::string_view sealed, std::string_view aad);

}  // namespace berth::crypto
