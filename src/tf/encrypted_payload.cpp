// internal/encryption/base.go (basedata) and method/aesgcm in OpenTofu.
#include "tf/encrypted_payload.h"

#include "core/base64.h"
#include "core/bounded_json.h"
#include "crypto/aes_gcm.h"

namespace berth::tf {

Result<std::string> OpenAesGcmPayload(std::string_view data, std::string_view key) {
  nlohmann::json envelope = data.starts_with("{") ? ParseBoundedJsonOrNull(data) : nlohmann::json();
  if (!envelope.is_object() || !envelope.contains("encrypted_data") ||
      !envelope["encrypted_data"].is_string() || !envelope.contains("encryption_version") ||
      !envelope["encryption_version"].is_string() ||
      envelope["encryption_version"].get<std::string>().empty()) {
    return MakeError(ErrorKind::kFailedPrecondition, "not an OpenTofu encrypted payload");
  }
  auto sealed = Base64Decode(envelope["encrypted_data"].get<std::string>());
  if (!sealed)
    return MakeError(ErrorKind::kInvalidArgument,
                     "encrypted payload: encrypted_data is not base64");
  auto opened = crypto::AesGcmOpen(key, *sealed, {});
  if (!opened)
    return MakeError(ErrorKind::kInvalidArgument, "encrypted payload: " + opened.error().message);
  return opened;
}

}  // namespace berth::tf
