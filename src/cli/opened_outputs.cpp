#include "cli/opened_outputs.h"

#include <string>

#include "crypto/age.h"

namespace berth::cli {

Result<void> OpenSealedOutputs(nlohmann::json& outputs, std::string_view identity) {
  for (auto& [name, output] : outputs.items()) {
    auto sealed = output.find("sealed_value");
    if (sealed == output.end() || !sealed->is_string()) continue;
    auto opened = crypto::AgeDecryptArmored(sealed->get<std::string>(), identity);
    if (!opened)
      return MakeError(ErrorKind::kInvalidArgument,
                       "output " + name + ": the sealed value did not open with this identity: " +
                           opened.error().message);
    auto value = nlohmann::json::parse(*opened, nullptr, false);
    if (value.is_discarded())
      return MakeError(ErrorKind::kInvalidArgument,
                       "output " + name + ": the sealed value is not JSON");
    output["value"] = std::move(value);
    output.erase("sealed_value");
  }
  return {};
}

}  // namespace berth::cli
