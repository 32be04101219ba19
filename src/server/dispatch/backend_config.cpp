#include "server/dispatch/backend_config.h"

#include "crypto/digest.h"

namespace berth::server {
namespace {

// "prefix/org/project/env", the prefix's own slashes trimmed.
std::string StateKey(const nlohmann::json& storage, const EnvironmentRef& where) {
  std::string prefix = storage.value("path_prefix", "");
  while (prefix.starts_with('/')) prefix.erase(0, 1);
  while (prefix.ends_with('/')) prefix.pop_back();
  std::string key = where.Key();
  return prefix.empty() ? key : prefix + "/" + key;
}

std::string Quoted(const std::string& value) { return "\"" + value + "\""; }

}  // namespace

std::string S3StateKey(const nlohmann::json& storage, const EnvironmentRef& where) {
  return StateKey(storage, where) + "/terraform.tfstate";
}

// A Secret suffix is also a label value (at most 63 characters): the environment's id, cut,
// and a hash of the whole location that keeps suffixes of different environments apart.
std::string KubernetesSecretSuffix(const EnvironmentRef& where) {
  std::string hash = crypto::Sha256Hex(where.Key()).substr(0, 10);
  return where.env.substr(0, 52) + "-" + hash;
}

Result<BackendSettings> RenderBackend(const nlohmann::json& storage, const EnvironmentRef& where,
                                      const std::string& berth_url, bool in_cluster) {
  std::string type = storage.value("type", "");
  BackendSettings out;
  auto set = [&out](const std::string& key, const std::string& value) {
    out.config.push_back(key + "=" + value);
  };
  if (type == "berth") {
    out.type = "http";
    std::string address = berth_url + "/state/v1/" + where.Key();
    for (const char* key : {"address", "lock_address", "unlock_address"}) set(key, address);
    // berthd may be restarting: tofu retries its state calls for ~40 s.
    set("retry_max", "9");
    set("retry_wait_min", "1");
    set("retry_wait_max", "5");
    return out;
  }
  std::string key = StateKey(storage, where);
  if (type == "kubernetes") {
    out.type = "kubernetes";
    set("namespace", storage.value("namespace", ""));
    set("secret_suffix", KubernetesSecretSuffix(where));
    if (in_cluster) set("in_cluster_config", "true");
  } else if (type == "s3") {
    out.type = "s3";
    set("bucket", storage.value("bucket", ""));
    set("region", storage.value("region", ""));
    set("key", S3StateKey(storage, where));
    set("use_lockfile", "true");  // S3's own conditional writes: no DynamoDB table needed
    std::string endpoints;        // TF's map syntax: {s3="...",sts="..."}
    for (const char* service : {"s3", "sts"}) {
      const std::string field = service == std::string("s3") ? "endpoint" : "sts_endpoint";
      if (std::string endpoint = storage.value(field, ""); !endpoint.empty())
        endpoints += (endpoints.empty() ? "" : ",") + std::string(service) + "=" + Quoted(endpoint);
    }
    if (!endpoints.empty()) set("endpoints", "{" + endpoints + "}");
    if (storage.value("use_path_style", false)) set("use_path_style", "true");
    if (std::string role = storage.value("role_arn", ""); !role.empty())
      set("assume_role", "{role_arn=" + Quoted(role) + "}");
  } else if (type == "gcs") {
    out.type = "gcs";  // locks with a lock object of its own
    set("bucket", storage.value("bucket", ""));
    set("prefix", key);
  } else if (type == "azurerm") {
    out.type = "azurerm";  // locks with a blob lease
    set("storage_account_name", storage.value("storage_account_name", ""));
    set("container_name", storage.value("container_name", ""));
    set("key", key + ".tfstate");
    if (std::string group = storage.value("resource_group_name", ""); !group.empty())
      set("resource_group_name", group);
    if (std::string subscription = storage.value("subscription_id", ""); !subscription.empty())
      set("subscription_id", subscription);
  } else {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "state storage type \"" + type + "\" has no TF backend berth can render");
  }
  return out;
}

}  // namespace berth::server
