// libFuzzer target: reading a result document a hostile runner wrote. It never crashes, and
// what it accepts writes back to a document that reads back the same.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/run_result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = berth::ParseRunResult(text);
  if (!parsed) return 0;
  // The parser refuses invalid UTF-8, so what it accepted writes back without replacement.
  auto again = berth::ParseRunResult(berth::RunResultToJson(*parsed).dump());
  if (!again || !(*again == *parsed)) std::abort();
  return 0;
}
