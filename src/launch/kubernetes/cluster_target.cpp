#include "launch/kubernetes/cluster_target.h"

#include "core/mutex.h"
#include "core/runner_config.h"
#include "crypto/digest.h"
#include "crypto/x509.h"
#include "sys/files.h"

namespace berth::launch {

namespace {

using nlohmann::json;
constexpr const char* kPath = "$.runner_configuration.cluster";
constexpr const char* kKubeconfig = "kubeconfig";  // in an organization's folder
// Short, so that one that leaks is soon worthless; it is signed again at half of it.
constexpr std::chrono::seconds kIdTokenLifetime = std::chrono::minutes(10);

std::string Text(const json& object, const char* field) {
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// berthd's ID token for one cluster: signed at first use and again once half its life is gone,
// so that a request never carries one about to expire; kept in memory only.
std::function<Result<std::string>()> IdTokenSource(
    std::function<Result<std::string>(const json&, std::chrono::seconds)> sign, json claims) {
  struct Cached {
    Mutex mutex;
    std::string token GUARDED_BY(mutex);
    std::chrono::steady_clock::time_point renew GUARDED_BY(mutex);
  };
  auto cached = std::make_shared<Cached>();
  return [sign = std::move(sign), claims = std::move(claims), cached]() -> Result<std::string> {
    MutexLock lock(cached->mutex);
    const auto now = std::chrono::steady_clock::now();
    if (cached->token.empty() || now >= cached->renew) {
      auto token = sign(claims, kIdTokenLifetime);
      if (!token) return token.error();
      cached->token = std::move(*token);
      cached->renew = now + kIdTokenLifetime / 2;
    }
    return cached->token;
  };
}

// The organization's folder of --clusters-dir, or the field error that says why there is none.
Result<std::filesystem::path> OrgFolder(const std::string& org, const ClusterMeans& means,
                                        const std::string& field) {
  if (means.dir.empty())
    return InvalidFields("no clusters", {{field,
                                          "cannot be read: berthd was given no "
                                          "--clusters-dir"}});
  if (!IsValidId(org))  // a folder name, never a path
    return InvalidFields(
        "no clusters", {{field, "has no folder: organization id " + org + " is not a DNS label"}});
  return means.dir / org;
}

}  // namespace

Result<std::optional<ClusterTarget>> ClusterTarget::Parse(const json& runner_configuration) {
  auto cluster = runner_configuration.find("cluster");
  if (cluster == runner_configuration.end() || cluster->is_null())
    return std::optional<ClusterTarget>();
  if (!cluster->is_object())
    return InvalidFields("invalid cluster", {{kPath, "must be an object"}});
  ClusterTarget target{.kubeconfig_context = Text(*cluster, "kubeconfig_context"),
                       .server = Text(*cluster, "server"),
                       .certificate_authority = Text(*cluster, "certificate_authority")};
  if (auto auth = cluster->find("auth"); auth != cluster->end() && auth->is_object()) {
    target.token_file = Text(*auth, "token_file");
    target.oidc_audience = Text(*auth, "oidc_audience");
  }
  // The saved configuration passed the schema; one saved otherwise is not guessed at.
  if (target.kubeconfig_context.empty() == target.server.empty() ||
      (!target.server.empty() && target.token_file.empty() == target.oidc_audience.empty()))
    return InvalidFields("invalid cluster",
                         {{kPath,
                           "give kubeconfig_context, or server, certificate_authority and "
                           "auth (token_file or oidc_audience)"}});
  return std::optional<ClusterTarget>(std::move(target));
}

std::string ClusterTarget::Key(const std::string& org, const std::string& runner) const {
  if (!kubeconfig_context.empty()) return "context:" + org + "/" + kubeconfig_context;
  const std::string at = "server:" + server + " ca:" + crypto::Sha256Hex(certificate_authority);
  if (!oidc_audience.empty())
    return at + " oidc:" + oidc_audience + " sub:" + ClusterSubject(org, runner);
  return at + " token:" + org + "/" + token_file;
}

std::string ClusterSubject(const std::string& org, const std::string& runner) {
  return "org:" + org + ":runner:" + runner;
}

std::string ClusterTarget::Name() const {
  return kubeconfig_context.empty() ? server : "kubeconfig context " + kubeconfig_context;
}

std::string ClusterTarget::Credential(const std::string& org, const std::string& runner) const {
  if (!kubeconfig_context.empty())
    return "the user of context " + kubeconfig_context + " of " + org + "/kubeconfig";
  if (!oidc_audience.empty())
    return "berthd's ID token (aud " + oidc_audience + ", sub " + ClusterSubject(org, runner) + ")";
  return "token file " + org + "/" + token_file;
}

FieldErrors Unreachable(const ClusterTarget& target, const std::string& org,
                        const ClusterMeans& means) {
  const std::string path = kPath;
  if (!target.kubeconfig_context.empty()) {
    auto folder = OrgFolder(org, means, path + ".kubeconfig_context");
    if (!folder) return folder.error().fields;
    auto config = kube::KubeConfig::FromFiles({*folder / kKubeconfig},
                                              {.context = target.kubeconfig_context});
    if (!config)
      return {{path + ".kubeconfig_context",
               "cannot be reached with " + org + "/kubeconfig: " + config.error().message}};
    return {};
  }
  FieldErrors fields;
  if (!crypto::CertificateFingerprint(target.certificate_authority))
    fields.push_back({path + ".certificate_authority", "must be a PEM certificate"});
  if (!target.oidc_audience.empty()) {
    // A cluster's apiserver fetches an issuer's discovery over https only.
    if (!means.sign_id_token || !means.issuer.starts_with("https://"))
      fields.push_back({path + ".auth.oidc_audience",
                        "cannot be used: berthd's issuer (" + means.issuer +
                            ") is not an https URL a cluster can fetch its keys from "
                            "(--public-url)"});
    return fields;
  }
  const std::string token_path = path + ".auth.token_file";
  auto folder = OrgFolder(org, means, token_path);
  if (!folder) {
    fields.push_back(folder.error().fields.front());
  } else if (target.token_file == kKubeconfig) {  // its credentials are for its contexts only
    fields.push_back({token_path, "names the organization's kubeconfig, not a token file"});
  } else if (!sys::ReadFile(*folder / target.token_file)) {
    fields.push_back(
        {token_path, "names no readable file in folder " + org + " of berthd's --clusters-dir"});
  }
  return fields;
}

Result<kube::KubeConfig> ConfigFor(const ClusterTarget& target, const std::string& org,
                                   const std::string& runner, const ClusterMeans& means) {
  if (FieldErrors fields = Unreachable(target, org, means); !fields.empty()) {
    const std::string first = fields.front().path + " " + fields.front().rule;
    Error error = InvalidFields("cluster " + target.Name() + ": " + first, std::move(fields));
    error.kind = ErrorKind::kFailedPrecondition;
    return error;
  }
  if (!target.kubeconfig_context.empty())
    return kube::KubeConfig::FromFiles({means.dir / org / kKubeconfig},
                                       {.context = target.kubeconfig_context});
  if (!target.oidc_audience.empty())
    return kube::KubeConfig::ForServer(
        {.server = target.server,
         .ca_pem = target.certificate_authority,
         .token_source = IdTokenSource(means.sign_id_token, {{"sub", ClusterSubject(org, runner)},
                                                             {"aud", target.oidc_audience}})});
  return kube::KubeConfig::ForServer({.server = target.server,
                                      .ca_pem = target.certificate_authority,
                                      .token_file = means.dir / org / target.token_file});
}

}  // namespace berth::launch
