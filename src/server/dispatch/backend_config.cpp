#include "server/dispatch/backend_config.h"

#include "core/overloaded.h"
#include "crypto/digest.h"

namespace berth::server {
namespace {

std::string Quoted(const std::string& value) { return "\"" + value + "\""; }

}  // namespace

std::string S3StateKey(const S3StateStorage& storage, const EnvironmentRef& where) {
  return PrefixedKey(storage.path_prefix, where.Key()) + "/terraform.tfstate";
}

// A Secret suffix is also a label value (at most 63 characters): the environment's id, cut,
// and a hash of the whole location that keeps suffixes of different environments apart.
std::string KubernetesSecretSuffix(const EnvironmentRef& where) {
  std::string hash = crypto::Sha256Hex(where.Key()).substr(0, 10);
  return where.env.substr(0, 52) + "-" + hash;
}

BackendSettings RenderBackend(const StateStorage& storage, const EnvironmentRef& where,
                              const std::string& berth_url, bool in_cluster) {
  BackendSettings out;
  auto set = [&out](const std::string& key, const std::string& value) {
    out.config.push_back(key + "=" + value);
  };
  std::visit(Overloaded{
                 [&](const BerthStateStorage&) {
                   out.type = "http";
                   std::string address = berth_url + "/state/v1/" + where.Key();
                   for (const char* key : {"address", "lock_address", "unlock_address"})
                     set(key, address);
                   // berthd may be restarting: tofu retries its state calls for ~40 s.
                   set("retry_max", "9");
                   set("retry_wait_min", "1");
                   set("retry_wait_max", "5");
                 },
                 [&](const KubernetesStateStorage& kubernetes) {
                   out.type = "kubernetes";
                   set("namespace", kubernetes.ns);
                   set("secret_suffix", KubernetesSecretSuffix(where));
                   if (in_cluster) set("in_cluster_config", "true");
                 },
                 [&](const S3StateStorage& s3) {
                   out.type = "s3";
                   set("bucket", s3.bucket);
                   set("region", s3.region);
                   set("key", S3StateKey(s3, where));
                   set("use_lockfile", "true");  // S3's own conditional writes: no DynamoDB table
                   std::string endpoints;        // TF's map syntax: {s3="...",sts="..."}
                   for (const auto& [service, endpoint] :
                        {std::pair{"s3", s3.endpoint}, {"sts", s3.sts_endpoint}}) {
                     if (!endpoint.empty())
                       endpoints += (endpoints.empty() ? "" : ",") + std::string(service) + "=" +
                                    Quoted(endpoint);
                   }
                   if (!endpoints.empty()) set("endpoints", "{" + endpoints + "}");
                   if (s3.use_path_style) set("use_path_style", "true");
                   if (!s3.role_arn.empty())
                     set("assume_role", "{role_arn=" + Quoted(s3.role_arn) + "}");
                 },
                 [&](const GcsStateStorage& gcs) {
                   out.type = "gcs";  // locks with a lock object of its own
                   set("bucket", gcs.bucket);
                   set("prefix", PrefixedKey(gcs.path_prefix, where.Key()));
                 },
                 [&](const AzurermStateStorage& azure) {
                   out.type = "azurerm";  // locks with a blob lease
                   set("storage_account_name", azure.storage_account_name);
                   set("container_name", azure.container_name);
                   set("key", PrefixedKey(azure.path_prefix, where.Key()) + ".tfstate");
                   if (!azure.resource_group_name.empty())
                     set("resource_group_name", azure.resource_group_name);
                   if (!azure.subscription_id.empty())
                     set("subscription_id", azure.subscription_id);
                 },
             },
             storage);
  return out;
}

}  // namespace berth::server
