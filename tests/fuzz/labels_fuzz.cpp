// libFuzzer target: the `labels` of a project or environment as the API receives them, and the
// quantities among them. Any bytes: parsed as JSON (as the API does), then validated. It must
// refuse with field errors or accept, never crash; accepted labels validate again unchanged,
// and every quantity's canonical form means the same value.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/quantity.h"
#include "core/run_labels.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded()) return 0;
  auto labels = berth::ParseLabels(body, "$.labels");
  if (!labels) {
    if (labels.error().fields.empty()) std::abort();  // a refusal always says which label
    return 0;
  }
  auto again = berth::ParseLabels(berth::LabelsJson(*labels), "$.labels");
  if (!again || *again != *labels) std::abort();
  if (!berth::EffectiveLabels(body, *labels)) std::abort();  // agreeing with itself
  for (const auto& [key, value] : *labels) {
    auto q = berth::Quantity::Parse(value);
    if (!q) continue;
    auto canonical = berth::Quantity::Parse(q->ToString());
    if (!canonical || *canonical != *q) std::abort();
  }
  return 0;
}
