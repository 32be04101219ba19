// Where the Kubernetes API is and who berth is to it: from kubeconfig files (KUBECONFIG, a
// context) or from inside a Pod (the service account). Parsed once; the bearer token of a file
// (a projected service account token) is re-read whenever the file changes.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "net/http_client.h"

namespace berth::kube {

using Environment = std::map<std::string, std::string>;

// The process's own environment.
Environment CurrentEnvironment();
// The files KUBECONFIG lists (colon-separated); empty when it is not set.
std::vector<std::filesystem::path> KubeconfigFiles(const Environment& env);

struct KubeConfigOptions {
  std::string context;              // empty: current-context
  bool allow_insecure_tls = false;  // insecure-skip-tls-verify is refused unless this is set
};

// The default service account folder inside a Pod.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// A cluster named by its API server and CA, and the bearer token berth proves who it is with
// there: from a file (read on every request: it may rotate) or from a source that hands out a
// current one.
struct ServerAccess {
  std::string server;  // https://host:port
  std::string ca_pem;
  std::filesystem::path token_file;
  std::function<Result<std::string>()> token_source;
};

class KubeConfig {
 public:
  // One kubeconfig document (https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/);
  // relative file paths in it are resolved against dir.
  static Result<KubeConfig> Parse(std::string_view yaml, const std::filesystem::path& dir,
                                  const KubeConfigOptions& options);
  // Several files merged as kubectl does: the first file that names a cluster, user or
  // context (or sets current-context) wins.
  static Result<KubeConfig> FromFiles(const std::vector<std::filesystem::path>& files,
                                      const KubeConfigOptions& options);
  // Inside a Pod: KUBERNETES_SERVICE_HOST and _PORT, and account_dir's token, ca.crt and
  // namespace.
  static Result<KubeConfig> InCluster(const Environment& env,
                                      const std::filesystem::path& account_dir);
  // KUBECONFIG (a colon-separated list) when set, else in-cluster (BERTH_SERVICE_ACCOUNT_DIR
  // overrides the service account folder).
  static Result<KubeConfig> Load(const Environment& env, const KubeConfigOptions& options);
  // server must be https and ca_pem a certificate: berth sends a token to no server it cannot
  // verify.
  static Result<KubeConfig> ForServer(ServerAccess access);

  const std::string& Server() const { return server_; }  // https://host:port, no trailing /
  const net::TlsConfig& Tls() const { return tls_; }
  const std::string& ProxyUrl() const { return proxy_url_; }   // empty: the environment's
  const std::string& Namespace() const { return namespace_; }  // the context's; may be empty
  // The bearer token for the next request (empty: none), re-read from its file when set.
  Result<std::string> Token() const;

 private:
  friend class KubeConfigBuilder;
  KubeConfig() = default;
  std::string server_;
  net::TlsConfig tls_;
  std::string proxy_url_;
  std::string namespace_;
  std::string token_;
  std::filesystem::path token_file_;
  std::function<Result<std::string>()> token_source_;
};

}  // namespace berth::kube
