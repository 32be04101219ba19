// What a run of a kubernetes runner would meet in its cluster, found without launching one:
// who the cluster takes berthd for there (a SelfSubjectReview) and which of the rights a launch
// needs in the runner's namespace it lacks (a SelfSubjectAccessReview each). `berth runner
// check` shows it, so that a cluster's trust or RBAC is fixed before a deployment fails on it.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::launch {

// A right the launcher needs: verb on resource (of group, with subresource) in a namespace.
struct LauncherRight {
  std::string group;  // "" for the core group
  std::string resource;
  std::string subresource;
  std::string verb;
  // "create pods", "get pods/status", "create events.events.k8s.io": as kubectl auth can-i says.
  std::string Name() const;
};
// Every right the launcher uses (deploy/kubernetes/launcher-rbac.yaml grants exactly these).
const std::vector<LauncherRight>& LauncherRights();

struct ClusterCheck {
  std::string cluster;     // berthd's own, a kubeconfig context, or the server
  std::string credential;  // how berthd proves who it is there
  std::string ns;          // the runner's namespace
  std::string user;        // who the cluster takes berthd for
  std::vector<std::string> groups;
  std::vector<std::string> missing;  // LauncherRight::Name()s the cluster denies in ns
  std::string error;                 // empty: reached; else why not, in the cluster's words
};

// Asks api who berthd is and what it may do in ns; a cluster that refuses or does not answer
// leaves check.error set (the rest as far as it got).
void CheckCluster(kube::KubeApi& api, ClusterCheck& check);

}  // namespace berth::launch
