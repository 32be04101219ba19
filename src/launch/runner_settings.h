// A runner's configuration as its launcher uses it: parsed once from the document its type's
// schema accepted when it was saved, one struct per kind of launcher. Launchers take these and
// never read the runner's JSON themselves; adding a field to a runner type touches its schema
// (core/runner_config.cpp), its struct here and the code that uses it.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "core/error.h"
#include "core/runner_config.h"
#include "launch/kubernetes/cluster_target.h"
#include "launch/kubernetes/runner_pod_config.h"
#include "launch/local/run_firewall.h"
#include "launch/local/run_limits.h"

namespace berth::launch {

// `local`: a child process of berthd.
struct LocalRunnerSettings {
  std::optional<int> max_parallel;  // this runner's runs at once; nullopt: the launcher's
  std::string work_dir;             // where its run folders are made; empty: the launcher's
  RunLimits limits;
  bool cuts_network = false;   // network: berthd_only, a network namespace of its own
  NetworkAllowance allowance;  // network_allow, for network: full
};

// `kubernetes`: a Pod or Job of berthd's own Kubernetes launcher.
struct KubernetesRunnerSettings {
  RunnerPodConfig pod;                   // its job
  std::optional<ClusterTarget> cluster;  // the cluster it names; nullopt: berthd's own
};

// `kubernetes-agent`: a launch queued for the runner's agents, which run it in their cluster.
struct AgentRunnerSettings {
  KubernetesRunnerSettings job;  // what an agent's launcher runs (its own cluster)
  std::chrono::milliseconds command_expiry{std::chrono::hours(1)};
  // The configuration as saved: the agent's wire carries it (an agent parses it itself, with
  // this same code, so that an agent of another version reads what it knows).
  nlohmann::json saved;
};

using RunnerSettings =
    std::variant<LocalRunnerSettings, KubernetesRunnerSettings, AgentRunnerSettings>;

// The settings of a runner of type whose saved configuration is runner_configuration. An
// error for a type no launcher here runs, or a document its schema refuses (a row written by
// hand, or by a berthd of another version), naming the field.
Result<RunnerSettings> ParseRunnerSettings(RunnerType type,
                                           const nlohmann::json& runner_configuration);

// What a Kubernetes launcher runs: a kubernetes runner's, or an agent runner's job; null for
// settings of another launcher.
const KubernetesRunnerSettings* KubernetesSettingsOf(const RunnerSettings& settings);

}  // namespace berth::launch
