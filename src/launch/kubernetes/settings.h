// The Kubernetes launcher's group-wide defaults, from the KUBERNETES_* environment variables
// (docs/kubernetes.md). Every value is validated at start-up; an error names the variable.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/quantity.h"
#include "kube/kube_config.h"

namespace berth::launch {

struct KubernetesSettings {
  std::string image;                  // KUBERNETES_IMAGE (required): the runner image
  std::string ns;                     // KUBERNETES_NAMESPACE (required)
  std::string service_account;        // KUBERNETES_SERVICE_ACCOUNT; empty: the namespace default
  std::optional<Quantity> memory;     // KUBERNETES_MEMORY: request and limit
  std::optional<Quantity> cpu;        // KUBERNETES_CPU: request and limit
  std::string container_backend_url;  // KUBERNETES_CONTAINER_BACKEND_URL
  std::chrono::seconds startup_grace_period{300};  // KUBERNETES_STARTUP_GRACE_PERIOD
  std::vector<std::string> image_pull_secrets;     // KUBERNETES_IMAGE_PULL_SECRETS
  std::string image_pull_policy;      // KUBERNETES_IMAGE_PULL_POLICY; empty: the kubelet's default
  bool allow_image_override = false;  // KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE
  std::chrono::seconds reap_interval{60};  // REAP_INTERVAL
  std::string kubeconfig;                  // KUBECONFIG; empty: in-cluster
  // The launcher's own HTTP_PROXY, HTTPS_PROXY and NO_PROXY (either case), forwarded to Pods.
  std::vector<std::pair<std::string, std::string>> proxy_env;

  static Result<KubernetesSettings> FromEnvironment(const kube::Environment& env);
};

}  // namespace berth::launch
