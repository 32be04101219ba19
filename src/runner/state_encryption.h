// OpenTofu's client-side encryption of state and plans with an environment's key that berth
// keeps (state_encryption: berth). The runner stages the key in a file of the run's own
// (--state-key-file, or the gateway's state-key with --state-encryption) and gives tofu an
// encryption configuration (TF_ENCRYPTION) whose key provider is the runner itself
// (`runner key-provider`, OpenTofu's external key provider protocol): the key never sits in
// tofu's environment or on a command line, and berth's backend and artifacts get only
// ciphertext. A plaintext state or plan is still read (the way into encryption for an
// environment that had none); everything written is encrypted.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/error.h"

namespace berth::runner {

// The key in the file: 32 bytes, base64. Its base64 text, or why it is not one.
Result<std::string> ReadStateKey(const std::filesystem::path& key_file);

// TF_ENCRYPTION's value: AES-GCM with the key `runner key-provider --key-file=F` gives.
std::string EncryptionConfig(const std::filesystem::path& runner,
                             const std::filesystem::path& key_file);

// `runner key-provider`: the protocol's header, tofu's input read whole, then the key (as the
// decryption key too when tofu sent metadata, which it does to decrypt). Exit code.
int ServeStateKey(const std::filesystem::path& key_file, std::FILE* in, std::FILE* out);

}  // namespace berth::runner
