#include "launch/kubernetes/settings.h"

#include "core/duration.h"
#include "core/pattern.h"
#include "core/runner_config.h"

namespace berth::launch {
namespace {

// RFC 1123 label and subdomain, as Kubernetes names them.
const Pattern kDnsSubdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

class Reader {
 public:
  explicit Reader(const kube::Environment& env) : env_(env) {}

  std::string Get(const std::string& name) const {
    auto it = env_.find(name);
    return it == env_.end() ? std::string() : it->second;
  }
  void Fail(const std::string& name, const std::string& rule) {
    errors_.push_back(FieldError{name, rule});
  }
  std::string Required(const std::string& name) {
    std::string value = Get(name);
    if (value.empty()) Fail(name, "is required");
    return value;
  }
  std::optional<Quantity> Resource(const std::string& name) {
    std::string value = Get(name);
    if (value.empty()) return std::nullopt;
    auto quantity = Quantity::Parse(value);
    if (!quantity) {
      Fail(name,
           "must be a Kubernetes quantity such as 500m or 512Mi: " + quantity.error().message);
      return std::nullopt;
    }
    if (quantity->IsNegative()) Fail(name, "must not be negative");
    return *quantity;
  }
  std::chrono::seconds Seconds(const std::string& name, std::chrono::seconds fallback) {
    std::string value = Get(name);
    if (value.empty()) return fallback;
    auto duration = ParseDuration(value);
    if (!duration || *duration <= std::chrono::nanoseconds::zero()) {
      Fail(name, "must be a positive duration such as 90s or 5m");
      return fallback;
    }
    return std::chrono::ceil<std::chrono::seconds>(*duration);
  }
  bool Bool(const std::string& name) {
    std::string value = Get(name);
    if (value.empty() || value == "false") return false;
    if (value == "true") return true;
    Fail(name, "must be true or false");
    return false;
  }
  void Matches(const std::string& name, const std::string& value, const Pattern& pattern,
               const std::string& what) {
    if (!value.empty() && (value.size() > 253 || !pattern.Matches(value)))
      Fail(name, "must be " + what);
  }
  Result<void> Done() {
    if (errors_.empty()) return {};
    return InvalidFields("invalid Kubernetes launcher settings", errors_);
  }

 private:
  const kube::Environment& env_;
  FieldErrors errors_;
};

}  // namespace

Result<KubernetesSettings> KubernetesSettings::FromEnvironment(const kube::Environment& env) {
  Reader in(env);
  KubernetesSettings s;
  s.image = in.Required("KUBERNETES_IMAGE");
  s.ns = in.Required("KUBERNETES_NAMESPACE");
  if (!s.ns.empty() && !IsValidId(s.ns))
    in.Fail("KUBERNETES_NAMESPACE", "must be a namespace name (an RFC 1123 label)");
  s.service_account = in.Get("KUBERNETES_SERVICE_ACCOUNT");
  in.Matches("KUBERNETES_SERVICE_ACCOUNT", s.service_account, kDnsSubdomain,
             "a service account name (an RFC 1123 subdomain)");
  s.memory = in.Resource("KUBERNETES_MEMORY");
  s.cpu = in.Resource("KUBERNETES_CPU");
  s.container_backend_url = in.Get("KUBERNETES_CONTAINER_BACKEND_URL");
  if (!s.container_backend_url.empty() && s.container_backend_url.rfind("http://", 0) != 0 &&
      s.container_backend_url.rfind("https://", 0) != 0)
    in.Fail("KUBERNETES_CONTAINER_BACKEND_URL", "must be an http(s) URL");
  s.startup_grace_period = in.Seconds("KUBERNETES_STARTUP_GRACE_PERIOD", s.startup_grace_period);
  for (std::string secrets = in.Get("KUBERNETES_IMAGE_PULL_SECRETS"); !secrets.empty();) {
    auto comma = secrets.find(',');
    std::string name = secrets.substr(0, comma);
    secrets = comma == std::string::npos ? "" : secrets.substr(comma + 1);
    if (name.empty()) continue;
    in.Matches("KUBERNETES_IMAGE_PULL_SECRETS", name, kDnsSubdomain,
               "a comma-separated list of Secret names");
    s.image_pull_secrets.push_back(name);
  }
  s.image_pull_policy = in.Get("KUBERNETES_IMAGE_PULL_POLICY");
  if (!s.image_pull_policy.empty() && s.image_pull_policy != "Always" &&
      s.image_pull_policy != "IfNotPresent" && s.image_pull_policy != "Never")
    in.Fail("KUBERNETES_IMAGE_PULL_POLICY", "must be one of: Always, IfNotPresent, Never");
  s.allow_image_override = in.Bool("KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE");
  s.reap_interval = in.Seconds("REAP_INTERVAL", s.reap_interval);
  s.kubeconfig = in.Get("KUBECONFIG");
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}) {
    if (std::string value = in.Get(name); !value.empty()) s.proxy_env.emplace_back(name, value);
  }
  if (auto done = in.Done(); !done) return done.error();
  return s;
}

}  // namespace berth::launch
