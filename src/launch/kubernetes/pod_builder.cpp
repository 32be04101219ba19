#include "launch/kubernetes/pod_builder.h"

#include <algorithm>

#include "core/run_labels.h"
#include "core/runner_config.h"
#include "crypto/digest.h"

namespace berth::launch {
namespace {

using nlohmann::json;

constexpr int64_t kRunnerUid = 65532;
constexpr const char* kRunnerImageBinary = "/runner";  // where the runner image keeps it
constexpr const char* kSharedBinaryDir = "/berth/bin";
constexpr const char* kSharedBinary = "/berth/bin/runner";

// seed 000's hardened default; a podTemplate securityContext replaces it whole.
json HardenedSecurityContext() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kRunnerUid},
          {"readOnlyRootFilesystem", true},
          {"allowPrivilegeEscalation", false},
          {"capabilities", {{"drop", {"ALL"}}}},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

class Resources {
 public:
  // A value written by the user: parsed here, an invalid one kept as an error.
  void Merge(const std::string& which, const std::string& resource, const std::string& value,
             const std::string& source) {
    auto quantity = Quantity::Parse(value);
    if (!quantity) {
      errors_.push_back({source, "must be a Kubernetes quantity such as 500m or 512Mi: " +
                                     quantity.error().message});
      return;
    }
    Set(which, resource, *quantity, source);
  }
  void Set(const std::string& which, const std::string& resource, const Quantity& value,
           const std::string& source) {
    (which == "requests" ? requests_ : limits_).insert_or_assign(resource, Entry{value, source});
  }

  // {requests, limits}, or the error: an invalid value, or a request above its limit.
  Result<json> Build() {
    for (const auto& [resource, request] : requests_) {
      auto limit = limits_.find(resource);
      if (limit != limits_.end() && request.value > limit->second.value) {
        errors_.push_back({request.source, "request " + request.value.ToString() +
                                               " is above the limit " +
                                               limit->second.value.ToString() + " (from " +
                                               limit->second.source + ")"});
      }
    }
    if (!errors_.empty()) return InvalidFields("invalid runner resources", errors_);
    json out = json::object();
    for (const auto& [which, values] : {std::pair{"requests", &requests_}, {"limits", &limits_}}) {
      for (const auto& [resource, entry] : *values) out[which][resource] = entry.value.ToString();
    }
    return Ok(std::move(out));
  }

 private:
  struct Entry {
    Quantity value;
    std::string source;
  };
  std::map<std::string, Entry> requests_, limits_;
  FieldErrors errors_;
};

Result<json> BuildResources(const KubernetesSettings& settings, const RunnerPodConfig& config,
                            const RunOverrides& overrides) {
  Resources resources;
  const json from_template = config.template_spec.value("resources", json::object());
  // KUBERNETES_CPU and KUBERNETES_MEMORY are a resource's request and limit unless the template
  // speaks of that resource: then its request and limit are the template's alone (a request
  // of 250m with the default limit of 100m left in would be refused).
  auto templated = [&from_template](const char* resource) {
    for (const char* which : {"requests", "limits"}) {
      if (from_template.value(which, json::object()).contains(resource)) return true;
    }
    return false;
  };
  for (const char* which : {"requests", "limits"}) {
    if (settings.cpu && !templated("cpu"))
      resources.Set(which, "cpu", *settings.cpu, "KUBERNETES_CPU");
    if (settings.memory && !templated("memory"))
      resources.Set(which, "memory", *settings.memory, "KUBERNETES_MEMORY");
    const json values = from_template.value(which, json::object());
    for (const auto& [resource, value] : values.items()) {
      resources.Merge(which, resource, value.get<std::string>(),
                      std::string("$.podTemplate.spec.resources.") + which + "." + resource);
    }
  }
  auto label = [](const char* key) { return std::string(kRunnerSpecLabelPrefix) + key; };
  if (overrides.request_cpu)
    resources.Set("requests", "cpu", *overrides.request_cpu, label("kubernetes_request_cpu"));
  if (overrides.limit_cpu)
    resources.Set("limits", "cpu", *overrides.limit_cpu, label("kubernetes_limit_cpu"));
  if (overrides.request_memory)
    resources.Set("requests", "memory", *overrides.request_memory,
                  label("kubernetes_request_memory"));
  if (overrides.limit_memory)
    resources.Set("limits", "memory", *overrides.limit_memory, label("kubernetes_limit_memory"));
  return resources.Build();
}

json Mount(std::string_view name, std::string_view path, bool read_only = false) {
  json mount = {{"name", name}, {"mountPath", path}};
  if (read_only) mount["readOnly"] = true;
  return mount;
}

json FieldEnv(const char* name, const char* field) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field}}}}}};
}

json Array(const json& spec, const char* key) { return spec.value(key, json::array()); }

// `runner serve` with the Pod's TLS files, listening on the Pod's own address (the Pod IP is
// where the controller dials; Kubernetes expands $(POD_IP) from the env).
json ServeArgs() {
  const std::string tls(kTlsMountPath);
  return {"serve", "--listen=$(POD_IP):" + std::to_string(kServePort),
          "--tls-cert=" + tls + "/tls.crt", "--tls-key=" + tls + "/tls.key",
          "--client-ca=" + tls + "/ca.crt"};
}

Result<void> CheckNames(const RunnerPodRequest& request, const RunnerManifests& out) {
  FieldErrors errors;
  if (request.served) {
    if (out.name.size() > 63 || !IsValidId(request.served->object_name))
      errors.push_back({"metadata.name",
                        "must be a DNS label of at most 53 characters (the "
                        "runner Pod is <name>-tf-runner)"});
    if (request.kind != WorkloadKind::kPod) errors.push_back({"kind", "a served runner is a Pod"});
  } else if (out.secret_name.size() > 63 || !IsValidId(request.run_id)) {
    errors.push_back({"run_id", "must be a DNS label of at most 47 characters"});
  }
  if (request.revision.size() > 53 || !IsLabelValue(request.revision))
    errors.push_back({"revision", "must make a label value (tf-runner-<revision>, 63 at most)"});
  if (!errors.empty()) return InvalidFields("invalid run", std::move(errors));
  return {};
}

}  // namespace

Result<RunnerManifests> BuildRunnerManifests(const KubernetesSettings& settings,
                                             const RunnerPodConfig& config,
                                             const RunnerPodRequest& request) {
  RunnerManifests out;
  const std::optional<ServedRunner>& served = request.served;
  out.name = served ? ServedPodName(served->object_name) : WorkloadName(request.run_id);
  out.secret_name = served ? served->tls_secret : TokenSecretName(request.run_id);
  out.ns = config.ns.empty() ? settings.ns : config.ns;
  if (auto named = CheckNames(request, out); !named) return named.error();
  const std::string instance = "tf-runner-" + request.revision;

  auto overrides = RunOverrides::FromLabels(request.labels);
  if (!overrides) return overrides.error();
  std::string image = config.image.empty() ? settings.image : config.image;
  if (!overrides->image.empty()) {
    if (settings.allow_image_override) {
      image = overrides->image;
    } else {
      out.warnings.push_back({std::string(kImageOverrideIgnored),
                              std::string(kRunnerSpecLabelPrefix) +
                                  "kubernetes_image is ignored: "
                                  "KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE is not true"});
    }
  }
  auto resources = BuildResources(settings, config, *overrides);
  if (!resources) return resources.error();

  const json& spec = config.template_spec;
  json security =
      spec.contains("securityContext") ? spec["securityContext"] : HardenedSecurityContext();
  auto berth_container = [&](json container) {
    container["securityContext"] = security;
    if (!resources->empty()) container["resources"] = *resources;
    if (!settings.image_pull_policy.empty())
      container["imagePullPolicy"] = settings.image_pull_policy;
    return container;
  };

  json init_containers = json::array();
  init_containers.push_back(
      berth_container({{"name", "copy-runner"},
                       {"image", settings.image},
                       {"command", {kRunnerImageBinary, "copy", kSharedBinary}},
                       {"volumeMounts", {Mount("berth-bin", kSharedBinaryDir)}}}));
  for (json container : Array(spec, "initContainers")) {
    if (!container.contains("securityContext")) container["securityContext"] = security;
    if (!container.contains("resources") && !resources->empty())
      container["resources"] = *resources;
    init_containers.push_back(std::move(container));
  }

  size_t containers = init_containers.size() + 1;
  out.result_max_bytes =
      std::min(kTerminationMessageBytesPerContainer, kTerminationMessageBytesPerPod / containers);
  if (out.result_max_bytes < 512)
    return InvalidFields("invalid runner configuration",
                         {{"$.podTemplate.spec.initContainers",
                           "leave room for the runner's result: at most 23 init containers"}});

  json env = json::array({FieldEnv("POD_NAME", "metadata.name"),
                          FieldEnv("POD_NAMESPACE", "metadata.namespace"),
                          {{"name", "HOME"}, {"value", "/home/runner"}}});
  if (served) {
    env.push_back(FieldEnv("POD_IP", "status.podIP"));
    // A kept Pod keeps the providers it downloaded for the next run (seed 000).
    if (!config.always_cleanup)
      env.push_back({{"name", "TF_PLUGIN_CACHE_DIR"}, {"value", "/tmp/plugin-cache"}});
  } else {
    env.push_back(
        {{"name", "BERTH_TOKEN_FILE"}, {"value", std::string(kTokenMountPath) + "/token"}});
  }
  for (const auto& [name, value] : settings.proxy_env)
    env.push_back({{"name", name}, {"value", value}});
  for (const json& entry : Array(spec, "env")) env.push_back(entry);

  RunnerInvocation invocation = request.invocation;
  invocation.binary = config.binary;
  invocation.result_max_bytes = out.result_max_bytes;
  invocation.ns = out.ns;
  invocation.name = request.run_id;
  invocation.image = image;
  // Explicit, though they are the runner's defaults: the paths the Pod mounts.
  invocation.workdir = "/tmp/" + out.ns + "-" + request.run_id;
  invocation.result = "/dev/termination-log";
  // The run's story as Events on its own workload (best effort: the runner goes on without
  // them when its service account may not post Events).
  invocation.event_object =
      std::string(request.kind == WorkloadKind::kPod ? "Pod/" : "Job/") + out.ns + "/" + out.name;
  json args = served ? ServeArgs() : json(invocation.Args());

  const char* secret_volume = served ? "berth-tls" : "berth-token";
  json mounts = {Mount("home", "/home/runner"), Mount("tmp", "/tmp"),
                 Mount("berth-bin", kSharedBinaryDir, true),
                 Mount(secret_volume, served ? kTlsMountPath : kTokenMountPath, true)};
  for (const json& mount : Array(spec, "volumeMounts")) mounts.push_back(mount);
  json main = berth_container({{"name", kMainContainer},
                               {"image", image},
                               {"command", {kSharedBinary}},
                               {"args", args},
                               {"env", env},
                               {"volumeMounts", mounts},
                               {"terminationMessagePath", "/dev/termination-log"},
                               {"terminationMessagePolicy", "File"}});
  if (spec.contains("envFrom")) main["envFrom"] = spec["envFrom"];
  if (served) {
    main["ports"] = {{{"name", "grpc"}, {"containerPort", kServePort}, {"protocol", "TCP"}}};
    main["readinessProbe"] = {{"tcpSocket", {{"port", kServePort}}}, {"periodSeconds", 2}};
  }
  if (!config.image_pull_policy.empty()) main["imagePullPolicy"] = config.image_pull_policy;

  json volumes = {{{"name", "home"}, {"emptyDir", json::object()}},
                  {{"name", "tmp"}, {"emptyDir", json::object()}},
                  {{"name", "berth-bin"}, {"emptyDir", json::object()}},
                  {{"name", secret_volume},
                   {"secret", {{"secretName", out.secret_name}, {"defaultMode", 0444}}}}};
  for (const json& volume : Array(spec, "volumes")) volumes.push_back(volume);

  // The run's id as its host name: TF writes it into the state locks it takes ("Who":
  // user@host), so that berthd knows a lock a dead run left (server/dispatch/left_state_locks.h).
  json pod_spec = {
      {"restartPolicy", "Never"},    {"hostname", served ? served->object_name : request.run_id},
      {"enableServiceLinks", false}, {"initContainers", init_containers},
      {"containers", {main}},        {"volumes", volumes}};
  std::string account =
      config.service_account.empty() ? settings.service_account : config.service_account;
  if (!account.empty()) pod_spec["serviceAccountName"] = account;
  // A served Pod keeps its state through berth-controller's state service, so it needs no API
  // token: it gets one only when its object names the account it runs as (a module that
  // manages Kubernetes objects, or a backend of its own in the cluster).
  if (served && config.service_account.empty()) pod_spec["automountServiceAccountToken"] = false;
  if (config.termination_grace_period_seconds)
    pod_spec["terminationGracePeriodSeconds"] = *config.termination_grace_period_seconds;
  std::vector<std::string> pull_secrets = settings.image_pull_secrets;
  for (const std::string& secret : config.image_pull_secrets) {
    if (std::find(pull_secrets.begin(), pull_secrets.end(), secret) == pull_secrets.end())
      pull_secrets.push_back(secret);
  }
  for (const std::string& secret : pull_secrets)
    pod_spec["imagePullSecrets"].push_back({{"name", secret}});
  for (const char* key :
       {"nodeSelector", "affinity", "tolerations", "hostAliases", "priorityClassName"}) {
    if (spec.contains(key)) pod_spec[key] = spec[key];
  }

  out.spec_hash = "sha256:" + crypto::Sha256Hex(pod_spec.dump());
  // The template's labels may rename the descriptive app.kubernetes.io ones (the seed's
  // orchestrator job does); the berth.dev/ labels identify the run and are never theirs.
  json labels = {{"app.kubernetes.io/name", "tf-runner"},
                 {"app.kubernetes.io/instance", instance},
                 {"app.kubernetes.io/managed-by", "berth"}};
  labels.update(config.template_metadata.value("labels", json::object()));
  labels["berth.dev/terraform"] = out.ns;
  if (!served) labels[std::string(kRunLabel)] = request.run_id;
  labels[std::string(kLauncherLabel)] = request.launcher;
  json annotations = config.template_metadata.value("annotations", json::object());
  annotations[std::string(kSpecHashAnnotation)] = out.spec_hash;
  json metadata = {
      {"name", out.name}, {"namespace", out.ns}, {"labels", labels}, {"annotations", annotations}};

  if (request.kind == WorkloadKind::kPod) {
    out.workload = {
        {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
  } else {
    json on_failure = {
        {{"action", "FailJob"}, {"onPodConditions", {{{"type", "DisruptionTarget"}}}}},
        {{"action", "FailJob"},
         {"onExitCodes",
          {{"containerName", kMainContainer}, {"operator", "NotIn"}, {"values", {0}}}}}};
    out.workload = {{"apiVersion", "batch/v1"},
                    {"kind", "Job"},
                    {"metadata", metadata},
                    {"spec",
                     {{"backoffLimit", 0},
                      {"ttlSecondsAfterFinished", 600},
                      {"podFailurePolicy", {{"rules", on_failure}}},
                      {"template",
                       {{"metadata", {{"labels", labels}, {"annotations", annotations}}},
                        {"spec", pod_spec}}}}}};
  }
  if (served) return out;  // the controller writes the TLS Secret itself
  out.secret = {{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"type", "Opaque"},
                {"metadata",
                 {{"name", out.secret_name},
                  {"namespace", out.ns},
                  {"labels",
                   {{"app.kubernetes.io/managed-by", "berth"},
                    {std::string(kRunLabel), request.run_id},
                    {std::string(kLauncherLabel), request.launcher}}}}}};
  return out;
}

}  // namespace berth::launch
