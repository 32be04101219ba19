#include "controller/outputs_secret.h"

#include <algorithm>
#include <string>

#include "core/base64.h"
#include "core/bounded_json.h"

namespace berth::controller {

using nlohmann::json;

Result<json> OutputsSecretData(std::string_view outputs_json, const json& wanted) {
  auto outputs = ParseBoundedJson(outputs_json, kTfDocument);
  if (!outputs)
    return MakeError(ErrorKind::kInvalidArgument,
                     "the runner's outputs are refused: " + outputs.error().message);
  if (!outputs->is_object())
    return MakeError(ErrorKind::kInvalidArgument,
                     "the runner's outputs are refused: not an object of outputs by name");
  const bool some = wanted.is_array() && !wanted.empty();
  json data = json::object();
  for (const auto& [name, output] : outputs->items()) {
    if (some && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    auto value = output.is_object() ? output.find("value") : output.end();
    if (!output.is_object() || value == output.end())
      return MakeError(ErrorKind::kInvalidArgument,
                       "the runner's outputs are refused: output " + name + " has no value");
    data[name] = Base64Encode(value->is_string() ? value->get<std::string>() : value->dump());
  }
  return Ok(std::move(data));
}

}  // namespace berth::controller
