// The runner Pod (or Job) of one run, built from three sources in order: the launcher's
// KUBERNETES_* defaults, the runner's own configuration, and the run's override labels. Pure:
// the same inputs give the same manifest, which `berth render pod` prints.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/runner_invocation.h"
#include "launch/kubernetes/runner_pod_config.h"
#include "launch/kubernetes/settings.h"
#include "launch/launcher.h"

namespace berth::launch {

enum class WorkloadKind { kPod, kJob };

// berth-controller's runner Pod (seed 000): `<name>-tf-runner` runs `runner serve` on port
// 30000 with the TLS Secret mounted, and takes its runs from the controller over gRPC.
struct ServedRunner {
  std::string object_name;  // the Terraform object's (a DNS label of at most 53 characters)
  std::string tls_secret;   // holds tls.crt, tls.key and ca.crt; the controller writes it
};

struct RunnerPodRequest {
  std::string run_id;                         // a DNS label: names the Pod or Job and its Secret
  std::string revision;                       // app.kubernetes.io/instance=tf-runner-<revision>
  RunnerInvocation invocation;                // the run; the builder adds where it runs
  std::map<std::string, std::string> labels;  // the run's labels (overrides among them)
  WorkloadKind kind = WorkloadKind::kPod;
  std::string launcher = "berth";  // berth.dev/launcher: whose runs these are
  // Set for berth-controller's Pods: then run_id and invocation are unused, kind must be kPod,
  // and the manifests have no token Secret.
  std::optional<ServedRunner> served;
};

struct RunnerManifests {
  std::string ns;
  std::string name;         // of the Pod or Job
  std::string secret_name;  // holds the run's token under key "token" (served: the TLS Secret)
  nlohmann::json workload;  // the Pod or the Job
  nlohmann::json secret;    // without its data and owner: the launcher adds both (served: null)
  size_t result_max_bytes = 0;
  std::string spec_hash;              // of the Pod spec: a reused Pod must still match it
  std::vector<LaunchEvent> warnings;  // ignored overrides, said to the user and the run
};

// The termination message keeps 4096 bytes per container and 12 KiB per Pod across all of its
// containers (Kubernetes API reference, ContainerStatus).
inline constexpr size_t kTerminationMessageBytesPerContainer = 4096;
inline constexpr size_t kTerminationMessageBytesPerPod = size_t{12} * 1024;

// Labels every runner Pod carries.
inline constexpr std::string_view kRunLabel = "berth.dev/run";
inline constexpr std::string_view kLauncherLabel = "berth.dev/launcher";
inline constexpr std::string_view kSpecHashAnnotation = "berth.dev/spec-hash";
inline constexpr std::string_view kMainContainer = "runner";
inline constexpr std::string_view kTokenMountPath = "/berth/token";
inline constexpr std::string_view kTlsMountPath = "/berth/tls";
inline constexpr int kServePort = 30000;

// The names of a run's Pod or Job and of its token's Secret.
inline std::string WorkloadName(std::string_view run_id) {
  return "berth-run-" + std::string(run_id);
}
inline std::string TokenSecretName(std::string_view run_id) {
  return WorkloadName(run_id) + "-token";
}
inline std::string ServedPodName(std::string_view object_name) {
  return std::string(object_name) + "-tf-runner";
}

Result<RunnerManifests> BuildRunnerManifests(const KubernetesSettings& settings,
                                             const RunnerPodConfig& config,
                                             const RunnerPodRequest& request);

}  // namespace berth::launch
