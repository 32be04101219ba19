#include "controller/finalizer.h"

#include "controller/terraform_object.h"

namespace berth::controller {

using nlohmann::json;

bool HasDestroyFinalizer(const json& object) {
  const json finalizers =
      object.value("metadata", json::object()).value("finalizers", json::array());
  return std::find(finalizers.begin(), finalizers.end(), kDestroyFinalizer) != finalizers.end();
}

Result<void> SetDestroyFinalizer(kube::KubeApi& api, const json& object, bool wanted,
                                 std::string_view field_manager) {
  if (HasDestroyFinalizer(object) == wanted) return {};
  // The object as it is now: this pass may have written its status since it was read.
  const json read = object.value("metadata", json::object());
  auto current = api.Get(kTerraforms, read.value("namespace", ""), read.value("name", ""));
  if (!current) return current.error();
  if (HasDestroyFinalizer(*current) == wanted) return {};
  const json metadata = current->value("metadata", json::object());
  json finalizers = json::array();
  for (const json& finalizer : metadata.value("finalizers", json::array()))
    if (finalizer != kDestroyFinalizer) finalizers.push_back(finalizer);
  if (wanted) finalizers.push_back(kDestroyFinalizer);
  auto patched = api.Patch(
      kTerraforms, metadata.value("namespace", ""), metadata.value("name", ""),
      kube::PatchType::kMerge,
      {{"metadata",
        {{"finalizers", finalizers}, {"resourceVersion", metadata.value("resourceVersion", "")}}}},
      field_manager);
  if (!patched) return patched.error();
  return {};
}

Result<bool> NamespaceTerminating(kube::KubeApi& api, const std::string& ns) {
  auto namespace_object = api.Get(kube::kNamespaces, "", ns);
  if (!namespace_object) {
    if (namespace_object.error().kind == ErrorKind::kNotFound) return true;
    return namespace_object.error();
  }
  return namespace_object->value("metadata", json::object()).contains("deletionTimestamp");
}

}  // namespace berth::controller
