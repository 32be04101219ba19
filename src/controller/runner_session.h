// One run in a Terraform object's runner Pod: the Pod is made (or a kept one that still matches
// its spec.runner and certificate reused), awaited until Ready, dialled at its IP with mutual
// TLS, given the run, and deleted after unless spec.runner.alwaysCleanup is false.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/runner_pki.h"
#include "controller/terraform_object.h"
#include "core/error.h"
#include "kube/kube_api.h"
#include "launch/kubernetes/settings.h"
#include "rpc/runner_client.h"

namespace berth::controller {

// Error::reason of a run that never reached its runner: the status conditions' reasons.
inline constexpr std::string_view kRunnerConnectionFailed = "RunnerConnectionFailed";
inline constexpr std::string_view kRunnerQuotaExhausted = "RunnerQuotaExhausted";

struct RunnerSessionOptions {
  const launch::KubernetesSettings* settings = nullptr;
  std::chrono::seconds creation_timeout{120};
  std::string field_manager = "berth-controller";
};

struct RunnerRun {
  std::vector<std::string> args;  // `runner run`'s flags
  rpc::RunnerFiles files;
  std::string revision;  // the source revision, for the Pod's instance label
};

Result<rpc::RunnerReply> RunInRunnerPod(kube::KubeApi& api, RunnerPki& pki,
                                        const RunnerSessionOptions& options,
                                        const launch::TerraformObject& object, const RunnerRun& run,
                                        const std::function<void(std::string_view)>& on_log);

}  // namespace berth::controller
