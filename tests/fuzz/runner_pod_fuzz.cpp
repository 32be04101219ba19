// libFuzzer target: runner Pod configurations and override labels as users write them. Any
// input gives a manifest or an error naming fields; a manifest always keeps the hardened
// containers' shape and the result budget.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "launch/kubernetes/pod_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The part after the first newline is a label value for every override.
  size_t cut = text.find('\n');
  auto document = nlohmann::json::parse(text.substr(0, cut), nullptr, false);
  if (document.is_discarded()) return 0;
  static const auto kSettings = berth::launch::KubernetesSettings::FromEnvironment(
      {{"KUBERNETES_IMAGE", "berth/runner:1"}, {"KUBERNETES_NAMESPACE", "runners"}});
  auto config = berth::launch::RunnerPodConfig::Parse(std::move(document));
  if (!config) {
    if (config.error().fields.empty()) std::abort();
    return 0;
  }
  berth::launch::RunnerPodRequest request{
      .run_id = "r", .revision = "1", .invocation = {.op = "plan"}};
  if (cut != std::string_view::npos) {
    std::string value(text.substr(cut + 1));
    for (const char* key : {"kubernetes_request_cpu", "kubernetes_limit_cpu",
                            "kubernetes_request_memory", "kubernetes_limit_memory"})
      request.labels[std::string(berth::kRunnerSpecLabelPrefix) + key] = value;
  }
  auto manifests = berth::launch::BuildRunnerManifests(*kSettings, *config, request);
  if (manifests) {
    if (manifests->result_max_bytes < 512 || manifests->result_max_bytes > 4096) std::abort();
    if (manifests->workload["spec"]["containers"].size() != 1) std::abort();
  }
  return 0;
}
