// One reconcile of a Terraform object (docs/controller.md, "How an object is reconciled"):
// fetch its source, run a plan in its runner Pod, keep the plan for approval (or apply it at
// once with approvePlan: auto), apply the approved plan, write its outputs Secret, and say
// each step in status conditions.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/runner_pki.h"
#include "controller/state_service.h"
#include "controller/terraform_object.h"
#include "core/error.h"
#include "kube/kube_api.h"
#include "launch/kubernetes/settings.h"

namespace berth::controller {

struct ReconcilerOptions {
  launch::KubernetesSettings
      settings;  // the runner Pods' defaults (launch::ControllerRunnerSettings)
  StateEndpoint state;
  // A runner Pod that is not Ready by then is RunnerConnectionFailed.
  std::chrono::seconds runner_creation_timeout{120};
  size_t max_source_bytes = size_t{256} << 20;
  std::string field_manager = "berth-controller";
  std::string instance = "berth-controller";  // this replica, in its Events
  // A deletion under deletionPolicy: destroy whose destroy keeps failing (no source, no runner,
  // a failed run) lets the object go this long after it was deleted, keeping the
  // infrastructure and its state: an object is never stuck Terminating.
  std::chrono::seconds destroy_timeout{900};
};

// What a reconcile left for the caller: when to come back (zero: only on a change).
struct ReconcileOutcome {
  std::chrono::seconds requeue_after{0};
};

class Reconciler {
 public:
  Reconciler(kube::KubeApi& api, RunnerPki& pki, ReconcilerOptions options)
      : api_(api), pki_(pki), options_(std::move(options)) {}

  // Never throws; what went wrong is in the object's status (and returned).
  Result<ReconcileOutcome> Reconcile(const nlohmann::json& object);

 private:
  kube::KubeApi& api_;
  RunnerPki& pki_;
  const ReconcilerOptions options_;
};

}  // namespace berth::controller
