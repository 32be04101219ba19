// age v1 (https://age-encryption.org/v1) to and from X25519 recipients: what a runner encrypts
// its log chunks with when its environment names a log_recipient, so that berthd keeps them
// without being able to read them, and what `berth logs --identity` decrypts them with. Files
// are armored (the PEM-like text form), which every store keeps as text; the age tool reads
// them (`age -d -i KEY`) and writes them (`age -a -r age1...`).
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::crypto {

// "age1..." (Bech32): kInvalidArgument unless it is one well-formed X25519 recipient.
Result<std::string> ParseAgeRecipient(std::string_view recipient);  // the 32-byte key
Result<std::string> AgeEncryptArmored(std::string_view plaintext, std::string_view recipient);
// identity: "AGE-SECRET-KEY-1..." as age-keygen writes it (a file's comment lines are skipped).
Result<std::string> AgeDecryptArmored(std::string_view armored, std::string_view identity);

}  // namespace berth::crypto
