// Kubernetes Events about a Terraform object (events.k8s.io/v1), one per step its status
// records: `kubectl describe tf NAME` and `kubectl get events` tell the story. Best effort: an
// Event that cannot be posted is dropped, since the status already says the same.
#pragma once

#include <string>
#include <string_view>

#include "controller/terraform_object.h"
#include "kube/kube_api.h"

namespace berth::controller {

class EventRecorder {
 public:
  EventRecorder(kube::KubeApi& api, std::string instance)
      : api_(api), instance_(std::move(instance)) {}

  void Record(const launch::TerraformObject& object, bool warning, std::string_view reason,
              std::string_view action, std::string_view note);

 private:
  kube::KubeApi& api_;
  const std::string instance_;  // reportingInstance: which controller replica
};

}  // namespace berth::controller
