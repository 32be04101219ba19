// libFuzzer target: tofu's plan file read without tofu. The first byte chooses what the rest
// is: a whole file (zip structure, CRCs, an encrypted envelope), or the tfplan protobuf inside
// a well-formed zip (so that the fuzzer works on the protobuf, not on the CRC). It must read
// or refuse, never crash; a plan it reads has counts that add up, and its change list (its
// msgpack values and sensitive paths decoded) is read or refused as well.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "plan_file_builder.h"
#include "tf/encrypted_payload.h"
#include "tf/plan_changes.h"
#include "tf/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string file = data[0] % 2 == 0
                         ? rest
                         : berth::tf::testing::Zip(
                               {{.name = "tfplan", .content = rest, .deflate = data[0] % 4 == 1}});
  (void)berth::tf::OpenAesGcmPayload(file, std::string(32, 'K'));
  auto analysis = berth::tf::AnalysePlanFile(file, "k");
  if (analysis) {
    const auto& s = analysis->summary;
    if (s.add < 0 || s.change < 0 || s.destroy < 0 || s.replace < 0) std::abort();
    if (analysis->destructive.size() !=
        static_cast<size_t>(s.destroy) + static_cast<size_t>(s.replace))
      std::abort();
  }
  auto changes =
      berth::tf::ReadPlanChanges(file, [](std::string_view t) { return std::string(t); });
  if (changes && !changes->contains("resource_changes")) std::abort();
  return 0;
}
