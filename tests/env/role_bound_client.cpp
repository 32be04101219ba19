#include "role_bound_client.h"

#include <nlohmann/json.hpp>

#include "cli/body.h"
#include "kube/kube_config.h"
#include "kube_test_cluster.h"
#include "sys/files.h"

namespace berth::testenv {
namespace {

using nlohmann::json;

// Created, or there already (a second binary on the shared cluster made it).
Result<void> Ensure(kube::KubeApi& admin, const kube::ResourceKind& kind, const std::string& ns,
                    const json& object) {
  auto created = admin.Create(kind, ns, object);
  if (!created && created.error().kind != ErrorKind::kAlreadyExists) return created.error();
  return {};
}

}  // namespace

Result<std::string> BindRole(kube::KubeApi& admin, const std::filesystem::path& rbac_yaml,
                             const std::string& ns) {
  auto text = sys::ReadFile(rbac_yaml);
  if (!text) return text.error();
  size_t split = text->find("\n---\n");
  if (split == std::string::npos)
    return MakeError(ErrorKind::kInvalidArgument, "no `---` between Role and RoleBinding",
                     rbac_yaml.string());
  auto role = cli::YamlToJson(text->substr(0, split));
  if (!role) return role.error();
  auto binding = cli::YamlToJson(text->substr(split + 5));
  if (!binding) return binding.error();
  (*binding)["subjects"][0]["namespace"] = ns;
  std::string account = (*binding)["subjects"][0]["name"];
  json service_account = {
      {"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", account}}}};
  if (auto r = Ensure(admin, kube::kServiceAccounts, ns, service_account); !r) return r.error();
  // A ClusterRole (a controller of every namespace) is bound cluster-wide, a Role in ns.
  const bool cluster_wide = (*role)["kind"] == "ClusterRole";
  if (auto r = Ensure(admin, cluster_wide ? kube::kClusterRoles : kube::kRoles, ns, *role); !r)
    return r.error();
  if (auto r = Ensure(admin, cluster_wide ? kube::kClusterRoleBindings : kube::kRoleBindings, ns,
                      *binding);
      !r)
    return r.error();
  return account;
}

Result<std::string> TokenBoundToRole(kube::KubeApi& admin, const std::filesystem::path& rbac_yaml,
                                     const std::string& ns) {
  auto account = BindRole(admin, rbac_yaml, ns);
  if (!account) return account.error();
  auto token = admin.CreateSubresource(kube::kServiceAccounts, ns, *account, "token",
                                       {{"apiVersion", "authentication.k8s.io/v1"},
                                        {"kind", "TokenRequest"},
                                        {"spec", {{"expirationSeconds", 3600}}}});
  if (!token) return token.error();
  return (*token)["status"]["token"].get<std::string>();
}

Result<std::string> KubeconfigBoundToRole(kube::KubeApi& admin,
                                          const std::filesystem::path& rbac_yaml,
                                          const std::string& ns, const KubeTestCluster* cluster) {
  auto token = TokenBoundToRole(admin, rbac_yaml, ns);
  if (!token) return token.error();
  if (cluster == nullptr) {
    auto shared = KubeTestCluster::Shared();
    if (!shared) return shared.error();
    cluster = *shared;
  }
  return cluster->KubeconfigYaml({}, *token);
}

Result<std::unique_ptr<kube::KubeClient>> ClientBoundToRole(kube::KubeApi& admin,
                                                            const std::filesystem::path& rbac_yaml,
                                                            const std::string& ns,
                                                            const KubeTestCluster* cluster) {
  auto yaml = KubeconfigBoundToRole(admin, rbac_yaml, ns, cluster);
  if (!yaml) return yaml.error();
  auto config = kube::KubeConfig::Parse(*yaml, "/", {});
  if (!config) return config.error();
  return kube::MakeKubeClient(*config);
}

}  // namespace berth::testenv
