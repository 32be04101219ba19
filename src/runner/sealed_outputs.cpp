#include "runner/sealed_outputs.h"

#include <nlohmann/json.hpp>

#include "crypto/age.h"

namespace berth::runner {

Result<std::string> SealSensitiveOutputs(std::string_view outputs_json,
                                         std::string_view recipient) {
  auto doc = nlohmann::json::parse(outputs_json, nullptr, false);
  if (!doc.is_object()) return MakeError(ErrorKind::kInvalidArgument, "outputs: not a JSON object");
  for (auto& [name, output] : doc.items()) {
    // Only a boolean true is sensitive; a value of another type must not throw.
    auto sensitive = output.is_object() ? output.find("sensitive") : output.end();
    if (sensitive == output.end() || *sensitive != true) continue;
    auto sealed =
        crypto::AgeEncryptArmored(output.value("value", nlohmann::json()).dump(), recipient);
    if (!sealed) return sealed.error();
    output.erase("value");
    output["sealed_value"] = std::move(*sealed);
  }
  return doc.dump();
}

}  // namespace berth::runner
