// Where an environment's TF state lives, as the runner's backend settings: one state per
// environment, keyed by the environment (organization, project, id) under the state storage's
// path prefix, with each backend's own locking on. berth storage is berthd's HTTP backend
// (the run's token authenticates it); kubernetes is a Secret whose suffix names the
// environment; s3 and azurerm an object key; gcs a prefix.
#pragma once

#include <string>
#include <vector>

#include "core/environment_ref.h"
#include "core/error.h"
#include "core/state_storage.h"

namespace berth::server {

struct BackendSettings {
  std::string type;                 // the runner's --state-backend
  std::vector<std::string> config;  // its --backend-config KEY=VALUE entries
};

// The suffix of the kubernetes storage's Secret (and Lease) of an environment's state.
std::string KubernetesSecretSuffix(const EnvironmentRef& where);

// The s3 storage's object of an environment's state: PREFIX/ORG/PROJECT/ENV/terraform.tfstate
// (its lock is the same key and ".tflock").
std::string S3StateKey(const S3StateStorage& storage, const EnvironmentRef& where);

// storage: the runner's state storage. berth_url: berthd as runners reach it. in_cluster: the
// runner is a Pod (the kubernetes backend uses its service account).
BackendSettings RenderBackend(const StateStorage& storage, const EnvironmentRef& where,
                              const std::string& berth_url, bool in_cluster);

}  // namespace berth::server
