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

}  // namespace

FieldErrors PodRelaxations(const json& template_spec, const std::string& path) {
  FieldErrors out;
  if (!template_spec.is_object()) return out;
  if (template_spec.contains("securityContext"))
    CheckSecurityContext(template_spec["securityContext"], path + ".securityContext", out);
  const json init = template_spec.value("initContainers", json::array());
  for (size_t i = 0; init.is_array() && i < init.size(); ++i) {
    if (init[i].is_object() && init[i].contains("securityContext")) {
      CheckSecurityContext(init[i]["securityContext"],
                           path + ".initContainers[" + std::to_string(i) + "].securityContext",
                           out);
    }
  }
  const json volumes = template_spec.value("volumes", json::array());
  for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
    if (volumes[i].is_object() && volumes[i].contains("hostPath")) {
      out.push_back({path + ".volumes[" + std::to_string(i) + "].hostPath",
                     "mounts a folder of the node; only an admin may"});
    }
  }
  return out;
}

}  // namespace berth::launch
