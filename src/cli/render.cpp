#include "cli/render.h"

#include <cstdio>

#include "cli/body.h"
#include "cli/cli.h"
#include "launch/kubernetes/pod_builder.h"
#include "sys/files.h"

namespace berth::cli {
namespace {

int Fail(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.ToString().c_str());
  for (const auto& field : error.fields)
    std::fprintf(stderr, "  %s: %s\n", field.path.c_str(), field.rule.c_str());
  return kExitUsage;
}

}  // namespace

int RenderPod(const RenderPodOptions& options) {
  auto settings = launch::KubernetesSettings::FromEnvironment(kube::CurrentEnvironment());
  if (!settings) return Fail(settings.error());
  auto text = sys::ReadFile(options.runner_config);
  if (!text) return Fail(text.error());
  auto document = YamlToJson(*text);  // JSON is YAML too
  if (!document) return Fail(document.error());
  auto config = launch::RunnerPodConfig::Parse(std::move(*document));
  if (!config) return Fail(config.error());
  launch::RunnerPodRequest request{
      .run_id = options.run_id,
      .revision = options.revision,
      .invocation = {.op = options.op},
      .labels = options.labels,
      .kind = options.kind == "job" ? launch::WorkloadKind::kJob : launch::WorkloadKind::kPod};
  auto manifests = launch::BuildRunnerManifests(*settings, *config, request);
  if (!manifests) return Fail(manifests.error());
  for (const launch::LaunchEvent& warning : manifests->warnings)
    std::fprintf(stderr, "warning: %s\n", warning.message.c_str());
  std::fputs(JsonToYaml(manifests->workload).c_str(), stdout);
  std::fputs("\n", stdout);
  return kExitOk;
}

}  // namespace berth::cli
