// libFuzzer target: the outputs a hostile runner sends berth-controller, read into a Secret's
// data. It never throws or crashes; what it accepts holds one base64 string per output.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "controller/outputs_secret.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& wanted : {nlohmann::json::array(), nlohmann::json::array({"a", "b"})}) {
    auto secret = berth::controller::OutputsSecretData(text, wanted);
    if (!secret) continue;
    if (!secret->is_object()) std::abort();
    for (const auto& [name, value] : secret->items())
      if (!value.is_string()) std::abort();
  }
  return 0;
}
