// libFuzzer target: kubeconfig documents. Any input parses to a config or to an error; none
// crashes, throws or reads a file outside what it names.
#include <cstdint>
#include <string_view>

#include "kube/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = berth::kube::KubeConfig::Parse(text, "/nonexistent", {});
  if (config) (void)config->Token();
  return 0;
}
