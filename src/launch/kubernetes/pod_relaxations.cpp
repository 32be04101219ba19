#include "launch/kubernetes/pod_relaxations.h"

namespace berth::launch {
namespace {

using nlohmann::json;

bool IsTrue(const json& object, const char* key) {
  return object.contains(key) && object[key].is_boolean() && object[key].get<bool>();
}

bool IsFalse(const json& object, const char* key) {
  return object.contains(key) && object[key].is_boolean() && !object[key].get<bool>();
}

// A template's security context replaces the hardened one whole, so each hardened setting must
// be there, at least as strict.
void CheckSecurityContext(const json& context, const std::string& path, FieldErrors& out) {
  if (!context.is_object()) return;  // the schema refused it already
  auto relaxed = [&](const std::string& field, const std::string& rule) {
    out.push_back({path + "." + field, rule + " (berth's hardened default); only an admin may"});
  };
  if (IsTrue(context, "privileged")) relaxed("privileged", "must not be true");
  if (!IsTrue(context, "runAsNonRoot")) relaxed("runAsNonRoot", "must be true");
  if (context.contains("runAsUser") && context["runAsUser"] == 0)
    relaxed("runAsUser", "must not be 0");
  if (!IsFalse(context, "allowPrivilegeEscalation"))
    relaxed("allowPrivilegeEscalation", "must be false");
  if (!IsTrue(context, "readOnlyRootFilesystem")) relaxed("readOnlyRootFilesystem", "must be true");
  const json capabilities = context.value("capabilities", json::object());
  const json drop = capabilities.is_object() ? capabilities.value("drop", json::array()) : json();
  if (!drop.is_array() || std::find(drop.begin(), drop.end(), "ALL") == drop.end())
    relaxed("capabilities.drop", "must hold ALL");
  if (capabilities.is_object() && capabilities.contains("add") && !capabilities["add"].empty())
    relaxed("capabilities.add", "must be empty");
  const json seccomp = context.value("seccompProfile", json::object());
  std::string type = seccomp.is_object() ? seccomp.value("type", "") : "";
  if (type != "RuntimeDefault" && type != "Localhost")
    relaxed("seccompProfile.type", "must be RuntimeDefault or Localhost");
}

// Secrets reach a container by its environment too: a value from one (env[].valueFrom.
// secretKeyRef), or all of one's keys (envFrom[].secretRef).
void CheckEnvironment(const json& container, const std::string& path, FieldErrors& out) {
  const json env = container.value("env", json::array());
  for (size_t i = 0; env.is_array() && i < env.size(); ++i) {
    const json from = env[i].is_object() ? env[i].value("valueFrom", json()) : json();
    if (from.is_object() && from.contains("secretKeyRef"))
      out.push_back({path + ".env[" + std::to_string(i) + "].valueFrom.secretKeyRef",
                     "reads a Secret of the namespace; only an admin may"});
  }
  const json env_from = container.value("envFrom", json::array());
  for (size_t i = 0; env_from.is_array() && i < env_from.size(); ++i) {
    if (env_from[i].is_object() && env_from[i].contains("secretRef"))
      out.push_back({path + ".envFrom[" + std::to_string(i) + "].secretRef",
                     "reads a Secret of the namespace; only an admin may"});
  }
}

// The volumes a run may have of its own: scratch space and what describes it. Anything else
// reaches beyond the run (a Secret, say another run's token; a claim another Pod writes; the
// node's folders).
bool OwnVolume(const std::string& source) {
  return source == "name" || source == "emptyDir" || source == "configMap" ||
         source == "downwardAPI";
}

}  // namespace

FieldErrors PodRelaxations(const json& template_spec, const std::string& path) {
  FieldErrors out;
  if (!template_spec.is_object()) return out;
  if (template_spec.contains("securityContext"))
    CheckSecurityContext(template_spec["securityContext"], path + ".securityContext", out);
  CheckEnvironment(template_spec, path, out);
  const json init = template_spec.value("initContainers", json::array());
  for (size_t i = 0; init.is_array() && i < init.size(); ++i) {
    if (!init[i].is_object()) continue;
    const std::string container = path + ".initContainers[" + std::to_string(i) + "]";
    if (init[i].contains("securityContext"))
      CheckSecurityContext(init[i]["securityContext"], container + ".securityContext", out);
    CheckEnvironment(init[i], container, out);
  }
  const json volumes = template_spec.value("volumes", json::array());
  for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
    if (!volumes[i].is_object()) continue;
    for (const auto& [source, value] : volumes[i].items()) {
      if (OwnVolume(source)) continue;
      out.push_back({path + ".volumes[" + std::to_string(i) + "]." + source,
                     source == "hostPath" ? "mounts a folder of the node; only an admin may"
                                          : "mounts what is not the run's own (only emptyDir, "
                                            "configMap and downwardAPI are); only an admin may"});
    }
  }
  return out;
}

}  // namespace berth::launch
