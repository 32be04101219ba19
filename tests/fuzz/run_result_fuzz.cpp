// libFuzzer target: the result document writer. Whatever the fields hold and whatever the
// budget, the output is one valid JSON object within the budget.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/run_result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t budget = berth::kMinResultBytes + (size_t{data[0]} << 8 | data[1]) % 12000;
  std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  // Fields are cut from the input at 0x1f bytes.
  auto next = [&rest]() {
    size_t cut = rest.find('\x1f');
    std::string field(rest.substr(0, cut));
    rest.remove_prefix(cut == std::string_view::npos ? rest.size() : cut + 1);
    return field;
  };
  berth::RunResult r;
  r.op = next();
  r.binary_name = next();
  r.binary_version = next();
  r.image = next();
  r.inputs_hash = next();
  r.started_at = next();
  r.finished_at = next();
  r.steps.push_back({next(), 1, 0.5});
  r.outputs = std::vector<berth::OutputInfo>{{next(), true}};
  r.drift = berth::DriftReport{true, {next(), next()}};
  r.plan = berth::PlanSummary{next(), false, 1, 2, 3, 4, 5, true};
  r.error = berth::RunError{berth::RunErrorKind::kApply, next(), next(), 1, next()};

  std::string out = berth::SerializeRunResult(r, budget);
  if (out.size() > budget) std::abort();
  auto doc = nlohmann::json::parse(out, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc["error"]["kind"] != "Apply") std::abort();
  return 0;
}
