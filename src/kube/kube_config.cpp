// kubeconfig fields read here: clusters[].cluster.{server, certificate-authority(-data),
// insecure-skip-tls-verify, proxy-url}, users[].user.{client-certificate(-data),
// client-key(-data), token, tokenFile}, contexts[].context.{cluster, user, namespace}.
// Credential plugins (exec, auth-provider) and basic auth are refused by name.
#include "kube/kube_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "core/base64.h"
#include "sys/files.h"

extern char** environ;

namespace berth::kube {
namespace {

namespace fs = std::filesystem;

Error Invalid(std::string message, std::string context) {
  return MakeError(ErrorKind::kInvalidArgument, std::move(message), std::move(context));
}

// A named entry of one file, with the folder its relative paths are resolved against.
struct Entry {
  YAML::Node node;
  fs::path dir;
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
};

std::string Text(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) return {};
  const YAML::Node value = node[key];
  return value && value.IsScalar() ? value.as<std::string>() : std::string();
}

Result<void> MergeDocument(std::string_view yaml, const fs::path& dir, const std::string& origin,
                           Merged& merged) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Invalid(std::string("kubeconfig is not valid YAML: ") + e.what(), origin);
  }
  if (!root || root.IsNull()) return {};
  if (!root.IsMap()) return Invalid("kubeconfig must be a mapping", origin);
  if (merged.current_context.empty()) merged.current_context = Text(root, "current-context");
  struct Section {
    const char* list;
    const char* item;
    std::map<std::string, Entry>* into;
  };
  for (const Section& section :
       {Section{"clusters", "cluster", &merged.clusters}, Section{"users", "user", &merged.users},
        Section{"contexts", "context", &merged.contexts}}) {
    const YAML::Node list = root[section.list];
    if (!list || list.IsNull()) continue;
    if (!list.IsSequence()) return Invalid(std::string(section.list) + " must be a list", origin);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string where = std::string(section.list) + "[" + std::to_string(i) + "]";
      if (!list[i].IsMap()) return Invalid(where + " must be a mapping", origin);
      std::string name = Text(list[i], "name");
      const YAML::Node body = list[i][section.item];
      if (name.empty()) return Invalid(where + ".name is required", origin);
      if (!body || !body.IsMap())
        return Invalid(where + "." + section.item + " must be a mapping", origin);
      section.into->try_emplace(name, Entry{body, dir});
    }
  }
  return {};
}

// The bytes of FIELD-data (base64) or of the file FIELD names; empty when neither is set.
Result<std::string> DataOrFile(const Entry& entry, const std::string& field,
                               const std::string& where) {
  if (std::string data = Text(entry.node, (field + "-data").c_str()); !data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded) return Invalid(where + "." + field + "-data must be base64", "kubeconfig");
    return decoded;
  }
  std::string file = Text(entry.node, field.c_str());
  if (file.empty()) return std::string();
  fs::path path = fs::path(file).is_absolute() ? fs::path(file) : entry.dir / file;
  auto content = sys::ReadFile(path);
  if (!content)
    return Invalid(
        where + "." + field + " names a file that cannot be read: " + content.error().message,
        path.string());
  return content;
}

Result<std::string> ReadTrimmed(const fs::path& path) {
  auto text = sys::ReadFile(path);
  if (!text) return text.error();
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r' || text->back() == ' '))
    text->pop_back();
  return text;
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

Environment CurrentEnvironment() {
  Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos)
      env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::vector<fs::path> KubeconfigFiles(const Environment& env) {
  std::vector<fs::path> files;
  auto list = env.find("KUBECONFIG");
  if (list == env.end()) return files;
  size_t start = 0;
  while (start <= list->second.size()) {
    size_t end = list->second.find(':', start);
    if (end == std::string::npos) end = list->second.size();
    if (end > start) files.emplace_back(list->second.substr(start, end - start));
    start = end + 1;
  }
  return files;
}

class KubeConfigBuilder {
 public:
  static Result<KubeConfig> Resolve(const Merged& merged, const KubeConfigOptions& options) {
    std::string context_name = options.context.empty() ? merged.current_context : options.context;
    if (context_name.empty())
      return Invalid("no context: set current-context or name one", "kubeconfig");
    auto context = merged.contexts.find(context_name);
    if (context == merged.contexts.end())
      return Invalid("context \"" + context_name + "\" is not defined", "kubeconfig");
    std::string cluster_name = Text(context->second.node, "cluster");
    auto cluster = merged.clusters.find(cluster_name);
    if (cluster == merged.clusters.end())
      return Invalid("context \"" + context_name + "\" names cluster \"" + cluster_name +
                         "\", which is not defined",
                     "kubeconfig");

    KubeConfig config;
    config.namespace_ = Text(context->second.node, "namespace");
    std::string where = "clusters[" + cluster_name + "].cluster";
    config.server_ = WithoutTrailingSlash(Text(cluster->second.node, "server"));
    if (config.server_.rfind("https://", 0) != 0 && config.server_.rfind("http://", 0) != 0)
      return Invalid(where + ".server must be an http(s) URL", "kubeconfig");
    config.proxy_url_ = Text(cluster->second.node, "proxy-url");
    if (Text(cluster->second.node, "insecure-skip-tls-verify") == "true") {
      if (!options.allow_insecure_tls)
        return Invalid(where +
                           ".insecure-skip-tls-verify is refused: it trusts any server; give "
                           "certificate-authority(-data), or allow insecure TLS explicitly",
                       "kubeconfig");
      config.tls_.insecure_skip_verify = true;
    }
    auto ca = DataOrFile(cluster->second, "certificate-authority", where);
    if (!ca) return ca.error();
    config.tls_.ca_pem = *ca;

    std::string user_name = Text(context->second.node, "user");
    if (user_name.empty()) return config;
    auto user = merged.users.find(user_name);
    if (user == merged.users.end())
      return Invalid(
          "context \"" + context_name + "\" names user \"" + user_name + "\", which is not defined",
          "kubeconfig");
    where = "users[" + user_name + "].user";
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (user->second.node[unsupported])
        return Invalid(where + "." + unsupported +
                           " is not supported: use a client certificate or a bearer token",
                       "kubeconfig");
    }
    auto cert = DataOrFile(user->second, "client-certificate", where);
    if (!cert) return cert.error();
    auto key = DataOrFile(user->second, "client-key", where);
    if (!key) return key.error();
    if (cert->empty() != key->empty())
      return Invalid(where + ": client-certificate and client-key go together", "kubeconfig");
    config.tls_.client_cert_pem = *cert;
    config.tls_.client_key_pem = *key;
    config.token_ = Text(user->second.node, "token");
    if (std::string file = Text(user->second.node, "tokenFile"); !file.empty())
      config.token_file_ = fs::path(file).is_absolute() ? fs::path(file) : user->second.dir / file;
    return config;
  }

  static Result<KubeConfig> InCluster(const Environment& env, const fs::path& account_dir) {
    auto host = env.find("KUBERNETES_SERVICE_HOST");
    auto port = env.find("KUBERNETES_SERVICE_PORT");
    if (host == env.end() || port == env.end() || host->second.empty() || port->second.empty())
      return MakeError(ErrorKind::kFailedPrecondition,
                       "no Kubernetes API: KUBECONFIG is not set and KUBERNETES_SERVICE_HOST and "
                       "KUBERNETES_SERVICE_PORT are not either (not inside a Pod)");
    KubeConfig config;
    std::string h = host->second;
    if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 (RFC 3986 section 3.2.2)
    config.server_ = "https://" + h + ":" + port->second;
    auto ca = sys::ReadFile(account_dir / "ca.crt");
    if (!ca) return ca.error();
    config.tls_.ca_pem = *ca;
    config.token_file_ = account_dir / "token";
    if (auto ns = ReadTrimmed(account_dir / "namespace")) config.namespace_ = *ns;
    return config;
  }
};

Result<KubeConfig> KubeConfig::Parse(std::string_view yaml, const fs::path& dir,
                                     const KubeConfigOptions& options) {
  Merged merged;
  if (auto ok = MergeDocument(yaml, dir, "kubeconfig", merged); !ok) return ok.error();
  return KubeConfigBuilder::Resolve(merged, options);
}

Result<KubeConfig> KubeConfig::FromFiles(const std::vector<fs::path>& files,
                                         const KubeConfigOptions& options) {
  Merged merged;
  for (const fs::path& file : files) {
    auto text = sys::ReadFile(file);
    if (!text) return text.error();
    if (auto ok = MergeDocument(*text, file.parent_path(), file.string(), merged); !ok)
      return ok.error();
  }
  return KubeConfigBuilder::Resolve(merged, options);
}

Result<KubeConfig> KubeConfig::InCluster(const Environment& env, const fs::path& account_dir) {
  return KubeConfigBuilder::InCluster(env, account_dir);
}

Result<KubeConfig> KubeConfig::Load(const Environment& env, const KubeConfigOptions& options) {
  if (std::vector<fs::path> files = KubeconfigFiles(env); !files.empty())
    return FromFiles(files, options);
  auto dir = env.find("BERTH_SERVICE_ACCOUNT_DIR");
  return InCluster(env, dir != env.end() ? fs::path(dir->second) : fs::path(kServiceAccountDir));
}

Result<KubeConfig> KubeConfig::ForServer(ServerAccess access) {
  KubeConfig config;
  config.server_ = WithoutTrailingSlash(std::move(access.server));
  if (!config.server_.starts_with("https://") || config.server_.size() == 8)
    return Invalid("server must be an https URL", "cluster");
  if (access.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    return Invalid("certificate_authority must be a PEM certificate", "cluster");
  config.tls_.ca_pem = std::move(access.ca_pem);
  config.token_file_ = std::move(access.token_file);
  config.token_source_ = std::move(access.token_source);
  return config;
}

Result<std::string> KubeConfig::Token() const {
  if (token_source_) return token_source_();
  if (token_file_.empty()) return token_;
  // Read on every request: a projected token rotates under us, and reading it costs a syscall.
  auto token = ReadTrimmed(token_file_);
  if (!token)
    return MakeError(ErrorKind::kUnauthenticated,
                     "cannot read the bearer token file: " + token.error().message,
                     token_file_.string());
  return token;
}

}  // namespace berth::kube
