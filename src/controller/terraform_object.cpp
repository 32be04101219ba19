#include "controller/terraform_object.h"

#include "core/duration.h"

namespace berth::controller {

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
  if (StringField(object, "apiVersion", "apiVersion", "", errors) != kApiVersion)
    errors.push_back({"apiVersion", "must be " + std::string(kApiVersion)});
  if (StringField(object, "kind", "kind", "", errors) != kKind)
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
  auto config = launch::RunnerPodConfig::Parse(json{{"spec", {{"runner", runner}}}});
  if (!config) return config.error();
  out.runner = std::move(*config);
  out.runner.ns = out.ns;  // the runner Pod lives beside its object
  return out;
}

std::chrono::seconds SpecDuration(const json& spec, const char* key,
                                  std::chrono::seconds fallback) {
  if (!spec.is_object() || !spec.contains(key) || !spec[key].is_string()) return fallback;
  auto parsed = ParseDuration(spec[key].get<std::string>());
  if (!parsed) return fallback;
  return std::max(std::chrono::seconds(1),
                  std::chrono::duration_cast<std::chrono::seconds>(*parsed));
}

std::string ObjectKey(const json& object) {
  const json metadata = object.value("metadata", json::object());
  return metadata.value("namespace", "") + "/" + metadata.value("name", "");
}

Result<launch::KubernetesSettings> ControllerSettings(kube::Environment env) {
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
  return launch::KubernetesSettings::FromEnvironment(env);
}

Result<launch::RunnerManifests> BuildRunnerPod(const launch::KubernetesSettings& settings,
                                               const TerraformObject& object,
                                               std::string_view revision) {
  launch::RunnerPodRequest request{
      .revision = std::string(revision),
      .launcher = std::string(kLauncherName),
      .served = launch::ServedRunner{.object_name = object.name,
                                     .tls_secret = TlsSecretName(object.name)}};
  return launch::BuildRunnerManifests(settings, object.runner, request);
}

}  // namespace berth::controller
