// A runner's state storage (its state_storage_configuration), read once by its type's schema
// into the struct of that type: what renders the runner's backend, breaks a dead run's lock or
// rescues a state takes these, never the saved JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "core/error.h"
#include "core/runner_config.h"

namespace berth {

// berthd's own HTTP backend: each environment's state under its key, locked by berthd.
struct BerthStateStorage {};

struct KubernetesStateStorage {
  std::string ns;  // where the state Secrets and their Leases are
};

struct S3StateStorage {
  std::string bucket;
  std::string region;
  std::string path_prefix;
  std::string endpoint;      // an S3-compatible endpoint; empty: AWS's for the region
  std::string sts_endpoint;  // empty: AWS's for the region
  bool use_path_style = false;
  std::string role_arn;  // assumed from the run's own credentials; empty: used as they are
};

struct GcsStateStorage {
  std::string bucket;
  std::string path_prefix;
};

struct AzurermStateStorage {
  std::string storage_account_name;
  std::string container_name;
  std::string resource_group_name;
  std::string subscription_id;
  std::string path_prefix;
};

using StateStorage = std::variant<BerthStateStorage, KubernetesStateStorage, S3StateStorage,
                                  GcsStateStorage, AzurermStateStorage>;

// The storage a saved state_storage_configuration describes; what its type's schema refuses
// (a row written by hand or by another version) is an error naming the field.
Result<StateStorage> ParseStateStorage(const nlohmann::json& saved);

StateStorageType TypeOf(const StateStorage& storage);

// "prefix/org/project/env" for object stores: the environment's key under the storage's
// path prefix (its trailing slashes trimmed).
std::string PrefixedKey(const std::string& path_prefix, const std::string& environment_key);

}  // namespace berth
