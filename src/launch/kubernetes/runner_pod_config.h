// A runner's own Kubernetes configuration, in either of the two shapes users write: the
// controller's `spec.runner` (binary, image, serviceAccountName, alwaysCleanup,
// terminationGracePeriodSeconds, podTemplate) or a runner's `job` (namespace, service_account,
// pod_template, image). The per-run overrides carried by reserved labels are core's
// RunOverrides.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/quantity.h"
#include "core/run_labels.h"
#include "core/schema.h"

namespace berth::launch {

struct RunnerPodConfig {
  std::string binary = "auto";                  // auto | tofu | terraform
  std::string image;                            // empty: the launcher's
  std::string image_pull_policy;                // of the runner's container; empty: launcher's
  std::vector<std::string> image_pull_secrets;  // beside the launcher's
  std::string ns;                               // empty: the launcher's
  std::string service_account;                  // empty: the launcher's
  bool always_cleanup = true;                   // false: keep the Pod and reuse it
  std::optional<int64_t> termination_grace_period_seconds;
  // A plan's Pod is kept this long for its apply (job.keep_for_approval); 0: not kept.
  std::chrono::seconds keep_for_approval{0};
  nlohmann::json template_metadata = nlohmann::json::object();  // labels, annotations
  nlohmann::json template_spec = nlohmann::json::object();      // the fields of podTemplate.spec

  // Accepts {runner: {...}}, {spec: {runner: {...}}}, the bare spec.runner object, {job: {...}},
  // or a whole kubernetes runner_configuration {type, job, ...}. Every field error is collected
  // with its JSON path.
  static Result<RunnerPodConfig> Parse(nlohmann::json document);
  // A runner's job alone, its field errors under path ("$.runner_configuration.job").
  static Result<RunnerPodConfig> ParseJob(nlohmann::json job, const std::string& path);
};

// A runner's pod_template (seed 000's podTemplate): {metadata: {labels, annotations}, spec}.
const Schema& PodTemplateSchema();

}  // namespace berth::launch
