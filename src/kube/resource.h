// The Kubernetes resource kinds berth reads and writes, and the URL paths of their objects
// (Kubernetes API reference, "API concepts": /api/v1 for the core group, /apis/GROUP/VERSION
// otherwise).
#pragma once

#include <string>
#include <string_view>

namespace berth::kube {

struct ResourceKind {
  std::string_view api_version;  // "v1", "batch/v1"
  std::string_view kind;         // "Pod"
  std::string_view plural;       // "pods"
  bool namespaced = true;

  // /api/v1/namespaces/NS/pods; ns is ignored for cluster-scoped kinds, and an empty ns of a
  // namespaced kind means every namespace.
  std::string CollectionPath(std::string_view ns) const {
    std::string path = api_version.find('/') == std::string_view::npos ? "/api/" : "/apis/";
    path += api_version;
    if (namespaced && !ns.empty()) {
      path += "/namespaces/";
      path += ns;
    }
    path += "/";
    path += plural;
    return path;
  }
  std::string ObjectPath(std::string_view ns, std::string_view name) const {
    return CollectionPath(ns) + "/" + std::string(name);
  }
};

inline constexpr ResourceKind kPods{"v1", "Pod", "pods"};
inline constexpr ResourceKind kSecrets{"v1", "Secret", "secrets"};
inline constexpr ResourceKind kConfigMaps{"v1", "ConfigMap", "configmaps"};
inline constexpr ResourceKind kServiceAccounts{"v1", "ServiceAccount", "serviceaccounts"};
inline constexpr ResourceKind kResourceQuotas{"v1", "ResourceQuota", "resourcequotas"};
inline constexpr ResourceKind kNamespaces{"v1", "Namespace", "namespaces", false};
inline constexpr ResourceKind kNodes{"v1", "Node", "nodes", false};
inline constexpr ResourceKind kEvents{"events.k8s.io/v1", "Event", "events"};
inline constexpr ResourceKind kJobs{"batch/v1", "Job", "jobs"};
inline constexpr ResourceKind kLeases{"coordination.k8s.io/v1", "Lease", "leases"};
inline constexpr ResourceKind kRoles{"rbac.authorization.k8s.io/v1", "Role", "roles"};
inline constexpr ResourceKind kRoleBindings{"rbac.authorization.k8s.io/v1", "RoleBinding",
                                            "rolebindings"};
inline constexpr ResourceKind kClusterRoles{"rbac.authorization.k8s.io/v1", "ClusterRole",
                                            "clusterroles", false};
inline constexpr ResourceKind kClusterRoleBindings{
    "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", false};

}  // namespace berth::kube
