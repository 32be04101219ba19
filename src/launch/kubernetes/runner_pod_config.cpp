#include "launch/kubernetes/runner_pod_config.h"

#include "core/duration.h"
#include "core/run_labels.h"
#include "core/runner_config.h"
#include "core/schema.h"
#include "core/tf_variables.h"

namespace berth::launch {
namespace {

using nlohmann::json;

const char* const kDnsSubdomain =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

Schema StringMap() {
  return std::move(Schema::FreeObject()
                       .Require([](const json& v) -> std::optional<std::string> {
                         for (const auto& [key, value] : v.items()) {
                           if (!value.is_string()) return "values must be strings (" + key + ")";
                         }
                         return std::nullopt;
                       })
                       .JsonSchema({{"additionalProperties", {{"type", "string"}}}})
                       .Doc("string keys and values"));
}

Schema ListOfObjects() { return Schema::ArrayOf(Schema::FreeObject()); }

// podTemplate.spec: the fields a user may set, passed through to the Pod.
Schema TemplateSpec() {
  return Schema::Object({
      Optional("env", ListOfObjects()),
      Optional("envFrom", ListOfObjects()),
      Optional("volumes", ListOfObjects()),
      Optional("volumeMounts", ListOfObjects()),
      Optional("initContainers", ListOfObjects()),
      Optional("nodeSelector", StringMap()),
      Optional("affinity", Schema::FreeObject()),
      Optional("tolerations", ListOfObjects()),
      Optional("hostAliases", ListOfObjects()),
      Optional("priorityClassName", Schema::String()),
      Optional("securityContext", Schema::FreeObject()),
      Optional("resources", Schema::Object({Optional("requests", StringMap()),
                                            Optional("limits", StringMap())})),
      // The orchestrator seed's way to pick the runner's image: one container named main.
      Optional("containers",
               std::move(Schema::ArrayOf(
                             Schema::Object(
                                 {Required("name", std::move(Schema::String().OneOf({"main"}))),
                                  Optional("image", std::move(Schema::String().MaxLength(512))),
                                  Optional("imagePullPolicy",
                                           std::move(Schema::String().OneOf(
                                               {"Always", "IfNotPresent", "Never"})))}))
                             // TakeImageFields refuses a second entry.
                             .JsonSchema({{"maxItems", 1}}))),
      Optional("imagePullSecrets",
               Schema::ArrayOf(Schema::Object({Required(
                   "name", std::move(Schema::String().Pattern(kDnsSubdomain, "a Secret name")))}))),
  });
}

// Takes the main container's image and pull policy and the pull secrets out of a template's
// spec into the configuration (the builder puts them where they belong).
Result<void> TakeImageFields(RunnerPodConfig& config, const std::string& path) {
  json& spec = config.template_spec;
  if (spec.contains("containers")) {
    const json containers = spec["containers"];
    spec.erase("containers");
    if (containers.size() > 1)
      return InvalidFields("invalid runner configuration",
                           {{path + ".containers", "has one entry at most, named main"}});
    for (const json& main : containers) {
      std::string image = main.value("image", "");
      if (!image.empty() && !config.image.empty() && image != config.image)
        return InvalidFields(
            "invalid runner configuration",
            {{path + ".containers[0].image", "differs from the image set beside the template"}});
      if (!image.empty()) config.image = image;
      config.image_pull_policy = main.value("imagePullPolicy", "");
    }
  }
  if (spec.contains("imagePullSecrets")) {
    for (const json& secret : spec["imagePullSecrets"])
      config.image_pull_secrets.push_back(secret["name"].get<std::string>());
    spec.erase("imagePullSecrets");
  }
  return {};
}

// A template's env that sets a TF_* variable berth keeps for itself (core/tf_variables.h):
// refused, naming each.
Result<void> RefuseReservedTfVariables(const RunnerPodConfig& config, const std::string& path) {
  FieldErrors fields;
  const json env = config.template_spec.value("env", json::array());
  for (size_t i = 0; i < env.size(); ++i) {
    const json name = env[i].is_object() ? env[i].value("name", json()) : json();
    if (!name.is_string()) continue;
    if (auto reserved = ReservedTfVariable(name.get<std::string>()))
      fields.push_back({path + ".env[" + std::to_string(i) + "].name", "is refused: " + *reserved});
  }
  if (fields.empty()) return {};
  return InvalidFields("invalid runner configuration", std::move(fields));
}

// TemplateMetadataMap's rules as JSON Schema (a key's prefix is checked for its form, not its
// lengths).
json MetadataMapJsonSchema(bool values_are_labels) {
  constexpr const char* kName = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
  json value = {{"type", "string"}};
  if (values_are_labels) value["pattern"] = std::string("^(") + kName + ")?$";
  return {{"propertyNames",
           {{"pattern", std::string("^(") + kDnsSubdomain + "/)?" + kName + "$"},
            {"not", {{"pattern", "^berth\\.dev/"}}}}},
          {"additionalProperties", std::move(value)}};
}

// A template's label or annotation keys: Kubernetes keys outside berth.dev/, which names the
// run's own (a template could otherwise detach a Pod from its run); label values as Kubernetes
// takes them, so what is saved can launch.
Schema TemplateMetadataMap(bool values_are_labels) {
  return std::move(
      StringMap()
          .Require([values_are_labels](const json& v) -> std::optional<std::string> {
            for (const auto& [key, value] : v.items()) {
              if (!IsLabelKey(key)) return "key " + key + " is not a Kubernetes label key";
              if (key.starts_with("berth.dev/"))
                return "key " + key + ": berth.dev/ is reserved for berth's own";
              if (values_are_labels && value.is_string() &&
                  !IsLabelValue(value.get_ref<const std::string&>()))
                return "value of " + key +
                       " is not a label value (63 characters at most of letters, digits, '-', "
                       "'_', '.', starting and ending alphanumeric)";
            }
            return std::nullopt;
          })
          .JsonSchema(MetadataMapJsonSchema(values_are_labels))
          .Doc("Kubernetes keys, none under berth.dev/"));
}

}  // namespace

const Schema& PodTemplateSchema() {
  static const Schema kSchema = Schema::Object({
      Optional("metadata", Schema::Object({Optional("labels", TemplateMetadataMap(true)),
                                           Optional("annotations", TemplateMetadataMap(false))})),
      Optional("spec", TemplateSpec()),
  });
  return kSchema;
}

namespace {

// seed 000's spec.runner.
Schema ControllerRunner() {
  return Schema::Object({
      Optional("binary", std::move(Schema::String().OneOf({"auto", "tofu", "terraform"}))),
      Optional("image", std::move(Schema::String().MaxLength(512))),
      Optional("serviceAccountName",
               std::move(Schema::String().Pattern(kDnsSubdomain, "a service account name"))),
      Optional("alwaysCleanup", Schema::Bool()),
      Optional("terminationGracePeriodSeconds", std::move(Schema::Integer().Range(0, 86400))),
      Optional("podTemplate", PodTemplateSchema()),
  });
}

Result<void> Check(const Schema& schema, json& value, const std::string& path) {
  FieldErrors errors;
  schema.Validate(value, path, errors);
  if (errors.empty()) return {};
  return InvalidFields("invalid runner configuration", std::move(errors));
}

Result<RunnerPodConfig> FromControllerRunner(json runner, const std::string& path) {
  if (auto ok = Check(ControllerRunner(), runner, path); !ok) return ok.error();
  RunnerPodConfig config;
  config.binary = runner.value("binary", "auto");
  config.image = runner.value("image", "");
  config.service_account = runner.value("serviceAccountName", "");
  config.always_cleanup = runner.value("alwaysCleanup", true);
  if (runner.contains("terminationGracePeriodSeconds"))
    config.termination_grace_period_seconds =
        runner["terminationGracePeriodSeconds"].get<int64_t>();
  if (runner.contains("podTemplate")) {
    config.template_metadata = runner["podTemplate"].value("metadata", json::object());
    config.template_spec = runner["podTemplate"].value("spec", json::object());
  }
  if (auto taken = TakeImageFields(config, path + ".podTemplate.spec"); !taken)
    return taken.error();
  if (auto ours = RefuseReservedTfVariables(config, path + ".podTemplate.spec"); !ours)
    return ours.error();
  return config;
}

Result<RunnerPodConfig> FromRunnerJob(json job, const std::string& path) {
  if (auto ok = Check(KubernetesJobSchema(), job, path); !ok) return ok.error();
  RunnerPodConfig config;
  config.ns = job["namespace"].get<std::string>();
  config.image = job.value("image", "");
  config.service_account = job.value("service_account", "");
  config.binary = job.value("binary", config.binary);
  config.always_cleanup = job.value("always_cleanup", config.always_cleanup);
  if (job.contains("keep_for_approval"))  // checked by the schema
    config.keep_for_approval = std::chrono::duration_cast<std::chrono::seconds>(
        ParseDuration(job["keep_for_approval"].get<std::string>()).value());
  if (job.contains("termination_grace_period_seconds"))
    config.termination_grace_period_seconds =
        job["termination_grace_period_seconds"].get<int64_t>();
  if (job.contains("pod_template")) {
    json pod_template = job["pod_template"];
    if (auto ok = Check(PodTemplateSchema(), pod_template, path + ".pod_template"); !ok)
      return ok.error();
    config.template_metadata = pod_template.value("metadata", json::object());
    config.template_spec = pod_template.value("spec", json::object());
  }
  if (auto taken = TakeImageFields(config, path + ".pod_template.spec"); !taken)
    return taken.error();
  if (auto ours = RefuseReservedTfVariables(config, path + ".pod_template.spec"); !ours)
    return ours.error();
  return config;
}

Error NotAnObject(const std::string& path) {
  return InvalidFields("invalid runner configuration", {{path, "must be an object"}});
}

}  // namespace

Result<RunnerPodConfig> RunnerPodConfig::Parse(json document) {
  if (!document.is_object()) return NotAnObject("$");
  if (document.contains("type")) {  // a whole runner_configuration
    auto type =
        ParseRunnerType(document["type"].is_string() ? document["type"].get<std::string>() : "");
    if (!type || !document.contains("job"))
      return InvalidFields("invalid runner configuration",
                           {{"$.type", "must name a Kubernetes runner type (one with a job)"}});
    if (auto ok = Check(RunnerConfigurationSchema(*type), document, "$"); !ok) return ok.error();
    return FromRunnerJob(document["job"], "$.job");
  }
  if (document.contains("job")) {
    if (auto ok = Check(Schema::Object({Required("job", KubernetesJobSchema())}), document, "$");
        !ok)
      return ok.error();
    return FromRunnerJob(document["job"], "$.job");
  }
  if (document.contains("spec")) {
    json& spec = document["spec"];
    if (!spec.is_object() || !spec.contains("runner")) return NotAnObject("$.spec.runner");
    return FromControllerRunner(spec["runner"], "$.spec.runner");
  }
  if (document.contains("runner") && document.size() == 1)
    return FromControllerRunner(document["runner"], "$.runner");
  return FromControllerRunner(std::move(document), "$");
}

Result<RunnerPodConfig> RunnerPodConfig::ParseJob(json job, const std::string& path) {
  return FromRunnerJob(std::move(job), path);
}

}  // namespace berth::launch
