// Where a kubernetes runner's runs go (its runner_configuration.cluster) and how berthd reaches
// that cluster: parsed from the saved configuration, checked against what this berthd was given
// when the runner is saved, and made into the client configuration of the cluster's launcher.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "kube/kube_config.h"

namespace berth::launch {

struct ClusterTarget {
  std::string kubeconfig_context;  // set: a context of the organization's kubeconfig
  std::string server;              // else: the API server, its CA and the token file
  std::string certificate_authority;
  std::string token_file;     // a file name in the organization's folder of ClusterMeans::dir
  std::string oidc_audience;  // or: berthd's own ID token, for this audience

  // nullopt: the configuration names no cluster (berthd's own).
  static Result<std::optional<ClusterTarget>> Parse(const nlohmann::json& runner_configuration);
  // What tells the targets of runners apart: runs of targets with one key share a client and
  // launcher (a token file is the organization's own, an ID token the runner's).
  std::string Key(const std::string& org, const std::string& runner) const;
  // For messages: the context, or the server.
  std::string Name() const;
  // How berthd proves who it is there, for org's runner: never the token itself.
  std::string Credential(const std::string& org, const std::string& runner) const;
};

// What this berthd was given to reach clusters with. The operator gives each organization a
// folder of its own, DIR/ORG: a kubeconfig (DIR/ORG/kubeconfig) whose contexts its runners may
// name, and token files (DIR/ORG/FILE). No organization's runner reaches a cluster with another
// organization's credentials, nor with berthd's own KUBECONFIG (berthd's own cluster is the
// one a runner that names none runs in). An ID token berthd signs names the runner it is for
// (sub org:ORG:runner:RUNNER), so that the cluster grants each runner its own rights.
struct ClusterMeans {
  std::filesystem::path dir;  // --clusters-dir; empty: none
  // Signs berthd's ID token for claims (sub, aud) and a lifetime; null: berthd signs none.
  std::function<Result<std::string>(const nlohmann::json& claims, std::chrono::seconds lifetime)>
      sign_id_token;
  std::string issuer;  // the tokens' iss, where a verifier fetches discovery: https only
};

// The subject of berthd's ID token for a runner's cluster.
std::string ClusterSubject(const std::string& org, const std::string& runner);

// The fields of organization org's target this berthd cannot reach a cluster with (a context
// org's kubeconfig lacks, no such token file in org's folder, a CA that is not a certificate, an
// issuer no cluster can verify), each with its path under $.runner_configuration.cluster.
FieldErrors Unreachable(const ClusterTarget& target, const std::string& org,
                        const ClusterMeans& means);
// The client configuration of org's runner: the context's of org's kubeconfig, or the server's
// with org's token file or the runner's ID token (signed again a while before it expires).
Result<kube::KubeConfig> ConfigFor(const ClusterTarget& target, const std::string& org,
                                   const std::string& runner, const ClusterMeans& means);

}  // namespace berth::launch
