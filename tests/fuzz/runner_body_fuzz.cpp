// libFuzzer target: request bodies of the runner routes. Any bytes: parsed as JSON (as the API
// does), then validated into a runner. It must refuse with field errors or accept, never crash;
// an accepted runner must validate again unchanged (normalisation is idempotent).
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/runner_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded()) return 0;
  auto spec = berth::ParseRunnerSpec("fuzz", body);
  if (!spec) {
    if (spec.error().fields.empty()) std::abort();  // a refusal always says which field
    return 0;
  }
  nlohmann::json again = spec->ToJson();
  again.erase("id");
  auto twice = berth::ParseRunnerSpec("fuzz", again);
  if (!twice || twice->ToJson() != spec->ToJson()) std::abort();
  return 0;
}
