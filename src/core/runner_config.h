// Runners (seed 001): where runs execute (runner_configuration, typed) and where their state
// lives (state_storage_configuration, typed), with the compatibility matrix of the two types.
// A runner can only be built from a document that passed its type's schema.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/schema.h"

namespace berth {

enum class RunnerType {
  kKubernetes,
  kKubernetesAgent,
  kKubernetesGke,
  kKubernetesEks,
  kKubernetesAks,
  kServerlessEcs,
  kVm,
  kLocal,  // berth's own: child processes of berthd (the embedded default)
};

enum class StateStorageType { kKubernetes, kS3, kGcs, kAzurerm, kBerth };

std::string_view RunnerTypeName(RunnerType type);
std::optional<RunnerType> ParseRunnerType(std::string_view name);
std::string_view StateStorageTypeName(StateStorageType type);
std::optional<StateStorageType> ParseStateStorageType(std::string_view name);
const std::vector<RunnerType>& AllRunnerTypes();
const std::vector<StateStorageType>& AllStateStorageTypes();

// The one table of which state storage each runner type can use.
bool Compatible(RunnerType runner, StateStorageType storage);
// "kubernetes-gke accepts: kubernetes, s3, gcs, azurerm, berth" for one type, or the whole
// matrix as a Markdown table (docs and error messages print it).
std::string AcceptedStorage(RunnerType runner);
std::string CompatibilityMatrixMarkdown();
// docs/runners.md: every type's fields, from the schemas themselves.
std::string RunnerSchemasMarkdown();

// The schema of each type's configuration (including its `type` field).
const Schema& RunnerConfigurationSchema(RunnerType type);
const Schema& StateStorageSchema(StateStorageType type);
// The `job` of every Kubernetes runner type: namespace, service_account, pod_template, image,
// and the fields only berthd's own Kubernetes launcher honours (keep_for_approval).
const Schema& KubernetesJobSchema();

// What a runner's configuration names that this berthd does not honour yet (issue 44): the
// cluster of a cloud type, cloud credentials to obtain, a type no launcher here runs (a
// kubernetes runner's own cluster is reached: launch/kubernetes/cluster_target.h). Each with its
// field's path and why. A runner that sets one is refused when saved, and a deployment routed to
// one saved before fails at its launch, rather than run in berthd's own cluster with berthd's own
// credentials.
FieldErrors NotHonouredYet(RunnerType type);
// The same as an error: kFailedPrecondition (the API's 409; what this berthd cannot honour, not
// a document that breaks the schema) with every field, its message naming the first, as the
// API refuses such a runner and a deployment routed to one fails.
Result<void> CheckHonoured(std::string_view runner_id, RunnerType type);

struct RunnerSpec {
  std::string id;
  std::string description;
  RunnerType type = RunnerType::kLocal;
  StateStorageType storage = StateStorageType::kBerth;
  nlohmann::json runner_configuration;         // validated and normalised
  nlohmann::json state_storage_configuration;  // validated and normalised

  nlohmann::json ToJson() const;
};

// Object ids (runners, projects, environments, ...): a lowercase DNS label, 1 to 63.
bool IsValidId(std::string_view id);
inline constexpr std::string_view kIdRule =
    "a lowercase DNS label: a-z, 0-9 and '-', 1 to 63 characters, starting and ending with a "
    "letter or digit";

// Builds a runner from a request body {description?, runner_configuration,
// state_storage_configuration}. Every field error is collected (kInvalidArgument with fields);
// an incompatible pair of types is an error on $.state_storage_configuration.type that names
// the storage types the runner type accepts.
Result<RunnerSpec> ParseRunnerSpec(std::string_view id, nlohmann::json body);

}  // namespace berth
