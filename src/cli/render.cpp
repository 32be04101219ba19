#include "cli/render.h"

#include <cstdio>

#include "cli/body.h"
#include "cli/cli.h"
#include "launch/kubernetes/pod_builder.h"
#include "launch/kubernetes/terraform_runner_pod.h"
#include "sys/files.h"

namespace berth::cli {
namespace {

using nlohmann::json;

int Fail(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.ToString().c_str());
  for (const auto& field : error.fields)
    std::fprintf(stderr, "  %s: %s\n", field.path.c_str(), field.rule.c_str());
  return kExitUsage;
}

Result<json> ReadDocument(const std::string& path) {
  auto text = sys::ReadFile(path);
  if (!text) return text.error();
  return YamlToJson(*text);  // JSON is YAML too
}

// berth-controller's runner Pod for a Terraform object.
Result<launch::RunnerManifests> BuildTerraformPod(const RenderPodOptions& options) {
  auto settings = launch::ControllerRunnerSettings(kube::CurrentEnvironment());
  if (!settings) return settings.error();
  auto document = ReadDocument(options.terraform);
  if (!document) return document.error();
  auto object = launch::TerraformObject::Parse(*document);
  if (!object) return object.error();
  return launch::BuildTerraformRunnerPod(*settings, *object, options.revision);
}

// The Kubernetes launcher's Pod or Job for a run of a runner configuration.
Result<launch::RunnerManifests> BuildRunPod(const RenderPodOptions& options) {
  auto settings = launch::KubernetesSettings::FromEnvironment(kube::CurrentEnvironment());
  if (!settings) return settings.error();
  auto document = ReadDocument(options.runner_config);
  if (!document) return document.error();
  auto config = launch::RunnerPodConfig::Parse(std::move(*document));
  if (!config) return config.error();
  launch::RunnerPodRequest request{
      .run_id = options.run_id,
      .revision = options.revision,
      .invocation = {.op = options.op},
      .labels = options.labels,
      .kind = options.kind == "job" ? launch::WorkloadKind::kJob : launch::WorkloadKind::kPod};
  return launch::BuildRunnerManifests(*settings, *config, request);
}

}  // namespace

int RenderPod(const RenderPodOptions& options) {
  auto manifests = options.terraform.empty() ? BuildRunPod(options) : BuildTerraformPod(options);
  if (!manifests) return Fail(manifests.error());
  for (const launch::LaunchEvent& warning : manifests->warnings)
    std::fprintf(stderr, "warning: %s\n", warning.message.c_str());
  std::fputs(JsonToYaml(manifests->workload).c_str(), stdout);
  std::fputs("\n", stdout);
  return kExitOk;
}

}  // namespace berth::cli
