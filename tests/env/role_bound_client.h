// A client of the test cluster that holds exactly one of deploy/kubernetes' Roles: the Role and
// its RoleBinding from the file, the ServiceAccount they bind, and that account's token.
// Tests run berthd's Kubernetes code as this client, so that a rule missing from the shipped
// Role fails a test.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::testenv {

class KubeTestCluster;

// rbac_yaml: a file holding a Role, `---`, and its RoleBinding (whose subject is a
// ServiceAccount); everything is created in ns with the admin client, the account too. A
// ClusterRole and its ClusterRoleBinding are made cluster-wide, their account in ns. Returns
// the account's name.
Result<std::string> BindRole(kube::KubeApi& admin, const std::filesystem::path& rbac_yaml,
                             const std::string& ns);
// A token (an hour long) of the account BindRole made.
Result<std::string> TokenBoundToRole(kube::KubeApi& admin, const std::filesystem::path& rbac_yaml,
                                     const std::string& ns);
// That token as a kubeconfig document of cluster (null: the shared one), for a process under
// test such as berth-agent.
Result<std::string> KubeconfigBoundToRole(kube::KubeApi& admin,
                                          const std::filesystem::path& rbac_yaml,
                                          const std::string& ns,
                                          const KubeTestCluster* cluster = nullptr);
Result<std::unique_ptr<kube::KubeClient>> ClientBoundToRole(
    kube::KubeApi& admin, const std::filesystem::path& rbac_yaml, const std::string& ns,
    const KubeTestCluster* cluster = nullptr);

}  // namespace berth::testenv
