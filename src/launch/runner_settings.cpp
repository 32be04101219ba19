#include "launch/runner_settings.h"

#include "core/duration.h"
#include "core/quantity.h"

namespace berth::launch {
namespace {

using nlohmann::json;

constexpr std::string_view kRoot = "$.runner_configuration";

// Normalises document as its type's schema does, or says what the schema refuses under kRoot.
Result<void> Check(RunnerType type, json& document) {
  FieldErrors errors;
  RunnerConfigurationSchema(type).Validate(document, std::string(kRoot), errors);
  if (!errors.empty()) return InvalidFields("invalid runner configuration", std::move(errors));
  return {};
}

std::optional<int64_t> Bytes(const json& limits, const char* field) {
  auto it = limits.find(field);
  if (it == limits.end() || !it->is_string()) return std::nullopt;
  auto q = Quantity::Parse(it->get<std::string>());
  return q ? q->AsInt64() : std::nullopt;
}

std::optional<int64_t> Integer(const json& limits, const char* field) {
  auto it = limits.find(field);
  if (it == limits.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

LocalRunnerSettings Local(const json& config) {
  LocalRunnerSettings local;
  if (auto it = config.find("max_parallel"); it != config.end() && it->is_number_integer())
    local.max_parallel = it->get<int>();
  local.work_dir = config.value("work_dir", "");
  const json limits = config.value("limits", json::object());
  local.limits = {.memory_bytes = Bytes(limits, "memory"),
                  .cpu_seconds = Integer(limits, "cpu_seconds"),
                  .disk_bytes = Bytes(limits, "disk"),
                  .processes = Integer(limits, "processes")};
  local.cuts_network = config.value("network", "full") == "berthd_only";
  for (const json& reach : config.value("network_allow", json::array())) {
    local.allowance.metadata |= reach == "metadata";
    local.allowance.loopback |= reach == "loopback";
  }
  return local;
}

// The job of a kubernetes or kubernetes-agent configuration, and the cluster it names.
Result<KubernetesRunnerSettings> Kubernetes(const json& config) {
  auto pod =
      RunnerPodConfig::ParseJob(config.value("job", json::object()), std::string(kRoot) + ".job");
  if (!pod) return pod.error();
  auto cluster = ClusterTarget::Parse(config);
  if (!cluster) return cluster.error();
  return KubernetesRunnerSettings{.pod = std::move(*pod), .cluster = std::move(*cluster)};
}

}  // namespace

Result<RunnerSettings> ParseRunnerSettings(RunnerType type, const json& runner_configuration) {
  json config = runner_configuration;
  switch (type) {
    case RunnerType::kLocal:
      if (auto checked = Check(type, config); !checked) return checked.error();
      return RunnerSettings(Local(config));
    case RunnerType::kKubernetes: {
      if (auto checked = Check(type, config); !checked) return checked.error();
      auto kubernetes = Kubernetes(config);
      if (!kubernetes) return kubernetes.error();
      return RunnerSettings(std::move(*kubernetes));
    }
    case RunnerType::kKubernetesAgent: {
      if (auto checked = Check(type, config); !checked) return checked.error();
      auto job = Kubernetes(config);
      if (!job) return job.error();
      AgentRunnerSettings agent{.job = std::move(*job), .saved = config};
      if (auto expiry = ParseDuration(config.value("command_expiry", "")))
        agent.command_expiry = std::chrono::duration_cast<std::chrono::milliseconds>(*expiry);
      return RunnerSettings(std::move(agent));
    }
    default:  // the API refuses to save these (core's NotHonouredYet)
      return MakeError(
          ErrorKind::kFailedPrecondition,
          "runner type " + std::string(RunnerTypeName(type)) + " has no launcher here");
  }
}

const KubernetesRunnerSettings* KubernetesSettingsOf(const RunnerSettings& settings) {
  if (const auto* kubernetes = std::get_if<KubernetesRunnerSettings>(&settings)) return kubernetes;
  if (const auto* agent = std::get_if<AgentRunnerSettings>(&settings)) return &agent->job;
  return nullptr;
}

}  // namespace berth::launch
