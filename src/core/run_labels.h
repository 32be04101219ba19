// Labels of projects and environments (a project's are inherited by its environments, an
// environment's win), snapshotted onto each deployment. The reserved runner-spec labels among
// them override a run's Kubernetes image and resources (docs/kubernetes.md); every other label
// is the user's own metadata, kept and shown with the deployment.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/quantity.h"

namespace berth {

using Labels = std::map<std::string, std::string>;

// berth.dev/runner-spec.kubernetes_image, ..._request_cpu, ..._limit_cpu, ..._request_memory,
// ..._limit_memory.
inline constexpr std::string_view kRunnerSpecLabelPrefix = "berth.dev/runner-spec.";

struct RunOverrides {
  std::string image;
  std::optional<Quantity> request_cpu, limit_cpu, request_memory, limit_memory;

  // Labels outside the reserved prefix are not overrides; an unknown reserved label, an invalid
  // or negative quantity, or a request above its limit is an error naming the label(s).
  static Result<RunOverrides> FromLabels(const Labels& labels);
};

// Kubernetes' rules: a key is [DNS subdomain/]name, a name (and a non-empty value) 63
// characters at most of letters, digits, '-', '_' and '.', starting and ending alphanumeric.
bool IsLabelKey(std::string_view key);
bool IsLabelValue(std::string_view value);

// A `labels` object of the API at path ("$.labels"): at most 64 entries, keys as Kubernetes
// label keys ([prefix/]name), string values of at most 1024 bytes, nothing else under
// berth.dev/ than the runner-spec labels, and those valid.
Result<Labels> ParseLabels(const nlohmann::json& value, const std::string& path);

// What a deployment of an environment runs with: its project's stored labels with the
// environment's on top, the runner-spec labels checked together (a project's limit against an
// environment's request, say).
Result<Labels> EffectiveLabels(const nlohmann::json& project_labels, const Labels& environment);

nlohmann::json LabelsJson(const Labels& labels);

}  // namespace berth
