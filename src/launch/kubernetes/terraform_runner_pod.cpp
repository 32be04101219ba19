#include "launch/kubernetes/terraform_runner_pod.h"

namespace berth::launch {

using nlohmann::json;

namespace {

// The string at key, or fallback when it is absent; a value of another type is an error.
std::string StringField(const json& object, const char* key, const std::string& path,
                        const std::string& fallback, FieldErrors& errors) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_string()) {
    errors.push_back({path, "must be a string"});
    return fallback;
  }
  return object[key].get<std::string>();
}

}  // namespace

Result<TerraformObject> TerraformObject::Parse(const json& object) {
  FieldErrors errors;
  if (!object.is_object())
    return InvalidFields("invalid Terraform object", {{"$", "must be an object"}});
  if (StringField(object, "apiVersion", "apiVersion", "", errors) != kTerraformApiVersion)
    errors.push_back({"apiVersion", "must be " + std::string(kTerraformApiVersion)});
  if (StringField(object, "kind", "kind", "", errors) != kTerraformKind)
    errors.push_back({"kind", "must be Terraform"});
  const json metadata = object.contains("metadata") ? object["metadata"] : json::object();
  TerraformObject out;
  if (metadata.is_object()) {
    out.name = StringField(metadata, "name", "metadata.name", "", errors);
    out.ns = StringField(metadata, "namespace", "metadata.namespace", "default", errors);
    out.uid = StringField(metadata, "uid", "metadata.uid", "", errors);
    if (metadata.contains("generation") && metadata["generation"].is_number_integer())
      out.generation = metadata["generation"].get<int64_t>();
  } else {
    errors.push_back({"metadata", "must be an object"});
  }
  if (out.name.empty()) errors.push_back({"metadata.name", "is required"});
  out.spec = object.contains("spec") ? object["spec"] : json::object();
  if (!out.spec.is_object()) errors.push_back({"spec", "must be an object"});
  if (!errors.empty()) return InvalidFields("invalid Terraform object", std::move(errors));
  json runner = out.spec.contains("runner") ? out.spec["runner"] : json::object();
  auto config = RunnerPodConfig::Parse(json{{"spec", {{"runner", runner}}}});
  if (!config) return config.error();
  out.runner = std::move(*config);
  out.runner.ns = out.ns;  // the runner Pod lives beside its object
  return out;
}

Result<KubernetesSettings> ControllerRunnerSettings(kube::Environment env) {
  if (env.contains("KUBERNETES_NAMESPACE")) {
    return InvalidFields("invalid controller settings",
                         {{"KUBERNETES_NAMESPACE",
                           "a runner Pod lives in its Terraform object's "
                           "namespace: leave it unset"}});
  }
  env["KUBERNETES_NAMESPACE"] = "default";  // required by the launcher's rules; never used
  // Seed 000's name for the default runner image; KUBERNETES_IMAGE, the launcher's, says the
  // same, and two that differ are refused rather than one of them ignored.
  if (auto pod_image = env.find("RUNNER_POD_IMAGE"); pod_image != env.end()) {
    auto image = env.find("KUBERNETES_IMAGE");
    if (image != env.end() && image->second != pod_image->second)
      return InvalidFields(
          "invalid controller settings",
          {{"RUNNER_POD_IMAGE", "differs from KUBERNETES_IMAGE: set one of them"}});
    env["KUBERNETES_IMAGE"] = pod_image->second;
  }
  return KubernetesSettings::FromEnvironment(env);
}

Result<RunnerManifests> BuildTerraformRunnerPod(const KubernetesSettings& settings,
                                                const TerraformObject& object,
                                                std::string_view revision) {
  RunnerPodRequest request{
      .revision = std::string(revision),
      .launcher = std::string(kControllerLauncherName),
      .served = ServedRunner{.object_name = object.name, .tls_secret = TlsSecretName(object.name)}};
  return BuildRunnerManifests(settings, object.runner, request);
}

}  // namespace berth::launch
