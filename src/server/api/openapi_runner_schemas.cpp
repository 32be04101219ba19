#include "server/api/openapi_runner_schemas.h"

#include <string>
#include <string_view>

#include "core/runner_config.h"
#include "launch/kubernetes/runner_pod_config.h"

namespace berth::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string RunnerComponent(RunnerType type) {
  return "RunnerConfiguration." + std::string(RunnerTypeName(type));
}
std::string StorageComponent(StateStorageType type) {
  return "StateStorageConfiguration." + std::string(StateStorageTypeName(type));
}

json RunnerConfigurationJsonSchema(RunnerType type) {
  json schema = RunnerConfigurationSchema(type).ToJsonSchema();
  // The core schema takes any object as a Kubernetes job's pod_template; the launcher checks
  // its fields (runner_pod_config.h), and a runner is refused when saved if they are wrong.
  json* job_properties =
      schema["properties"].contains("job") ? &schema["properties"]["job"]["properties"] : nullptr;
  if (job_properties && job_properties->contains("pod_template")) {
    json pod_template = launch::PodTemplateSchema().ToJsonSchema();
    pod_template["description"] = (*job_properties)["pod_template"]["description"];
    AllowNull(pod_template);
    (*job_properties)["pod_template"] = std::move(pod_template);
  }
  return schema;
}

json StateStorageJsonSchema(StateStorageType type) {
  json flat = StateStorageSchema(type).ToJsonSchema();
  if (type != StateStorageType::kKubernetes) return flat;
  // The orchestrator seed's nested form, {type, kubernetes_configuration: {namespace}}.
  json nested = flat;
  json ns = nested["properties"]["namespace"];
  nested["properties"].erase("namespace");
  nested["properties"]["kubernetes_configuration"] = {{"type", "object"},
                                                      {"properties", {{"namespace", ns}}},
                                                      {"required", {"namespace"}},
                                                      {"additionalProperties", false}};
  nested["required"] = {"type", "kubernetes_configuration"};
  return {{"oneOf", {flat, nested}}};
}

// {"oneOf": [refs], "discriminator": {"propertyName": "type", "mapping": {...}}}
template <typename Type, typename NameOf, typename ComponentOf>
ordered_json OneOfComponents(const std::vector<Type>& types, NameOf name_of,
                             ComponentOf component_of) {
  ordered_json refs = ordered_json::array();
  ordered_json mapping = ordered_json::object();
  for (Type type : types) {
    std::string ref = "#/components/schemas/" + component_of(type);
    refs.push_back({{"$ref", ref}});
    mapping[std::string(name_of(type))] = ref;
  }
  return {{"description", "typed by `type`: see docs/runners.md"},
          {"oneOf", refs},
          {"discriminator", {{"propertyName", "type"}, {"mapping", mapping}}}};
}

}  // namespace

ordered_json WithRunnerSchemas(ordered_json document) {
  ordered_json& schemas = document["components"]["schemas"];
  for (RunnerType type : AllRunnerTypes())
    schemas[RunnerComponent(type)] = ordered_json(RunnerConfigurationJsonSchema(type));
  for (StateStorageType type : AllStateStorageTypes())
    schemas[StorageComponent(type)] = ordered_json(StateStorageJsonSchema(type));
  // What a runner is created or replaced with, and what berthd answers with.
  for (const char* body : {"RunnerInput", "RunnerInputCreate", "Runner"}) {
    ordered_json& properties = schemas[body]["properties"];
    properties["runner_configuration"] =
        OneOfComponents(AllRunnerTypes(), RunnerTypeName, RunnerComponent);
    properties["state_storage_configuration"] =
        OneOfComponents(AllStateStorageTypes(), StateStorageTypeName, StorageComponent);
  }
  return document;
}

}  // namespace berth::server
