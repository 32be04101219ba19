// A runner's own Kubernetes configuration, in either of the two shapes users write: the
// controller's `spec.runner` (binary, image, serviceAccountName, alwaysCleanup,
// terminationGracePeriodSeconds, podTemplate) or a runner's `job` (namespace, service_account,
// pod_template, image). And the per-run overrides carried by reserved labels.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/quantity.h"

namespace berth::launch {

struct RunnerPodConfig {
  std::string binary = "auto";  // auto | tofu | terraform
  std::string image;            // empty: the launcher's
  std::string ns;               // empty: the launcher's
  std::string service_account;  // empty: the launcher's
  bool always_cleanup = true;   // false: keep the Pod and reuse it
  std::optional<int64_t> termination_grace_period_seconds;
  nlohmann::json template_metadata = nlohmann::json::object();  // labels, annotations
  nlohmann::json template_spec = nlohmann::json::object();      // the fields of podTemplate.spec

  // Accepts {runner: {...}}, {spec: {runner: {...}}}, the bare spec.runner object, {job: {...}},
  // or a whole kubernetes runner_configuration {type, job, ...}. Every field error is collected
  // with its JSON path.
  static Result<RunnerPodConfig> Parse(nlohmann::json document);
};

// Reserved labels of a run: berth.dev/runner-spec.kubernetes_image, ..._request_cpu,
// ..._limit_cpu, ..._request_memory, ..._limit_memory.
inline constexpr std::string_view kRunnerSpecLabelPrefix = "berth.dev/runner-spec.";

struct RunOverrides {
  std::string image;
  std::optional<Quantity> request_cpu, limit_cpu, request_memory, limit_memory;

  // Labels outside the reserved prefix are ignored; an unknown reserved label or an invalid
  // quantity is an error naming the label.
  static Result<RunOverrides> FromLabels(const std::map<std::string, std::string>& labels);
};

}  // namespace berth::launch
