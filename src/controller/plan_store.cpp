#include "controller/plan_store.h"

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr char kPlanIdAnnotation[] = "berth.dev/plan-id";
constexpr char kChunksAnnotation[] = "berth.dev/plan-chunks";
constexpr char kDigestAnnotation[] = "berth.dev/plan-sha256";

std::string ChunkName(const launch::TerraformObject& object, size_t index) {
  return "tfplan-" + object.name + "-" + std::to_string(index);
}

}  // namespace

Result<void> SavePlan(kube::KubeApi& api, const launch::TerraformObject& object,
                      const std::string& plan_id, const std::string& plan,
                      const std::string& field_manager) {
  const size_t chunks = std::max<size_t>(1, (plan.size() + kPlanChunkBytes - 1) / kPlanChunkBytes);
  // The first chunk is written last: until then, it still describes the previous plan whole.
  for (size_t n = chunks; n-- > 0;) {
    json metadata = {{"name", ChunkName(object, n)},
                     {"namespace", object.ns},
                     {"labels",
                      {{"app.kubernetes.io/managed-by", "berth-controller"},
                       {"berth.dev/terraform", object.name}}},
                     {"annotations", {{kPlanIdAnnotation, plan_id}}},
                     {"ownerReferences",
                      {{{"apiVersion", launch::kTerraformApiVersion},
                        {"kind", launch::kTerraformKind},
                        {"name", object.name},
                        {"uid", object.uid},
                        {"controller", true}}}}};
    if (n == 0) {
      metadata["annotations"][kChunksAnnotation] = std::to_string(chunks);
      metadata["annotations"][kDigestAnnotation] = crypto::Sha256Hex(plan);
    }
    const json data = {{"tfplan", Base64Encode(plan.substr(n * kPlanChunkBytes, kPlanChunkBytes))}};
    json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"type", "Opaque"},
                   {"metadata", metadata},
                   {"data", data}};
    auto created = api.Create(kube::kSecrets, object.ns, secret);
    if (created) continue;
    if (created.error().kind != ErrorKind::kAlreadyExists) return created.error();
    auto patched =
        api.Patch(kube::kSecrets, object.ns, ChunkName(object, n), kube::PatchType::kMerge,
                  {{"metadata", metadata}, {"data", data}}, field_manager);
    if (!patched) return patched.error();
  }
  // A longer plan before this one left chunks past the new count: nothing reads them, so they go.
  for (size_t n = chunks;; ++n) {
    auto deleted = api.Delete(kube::kSecrets, object.ns, ChunkName(object, n), {});
    if (!deleted) {
      if (deleted.error().kind == ErrorKind::kNotFound) return {};
      return deleted.error();
    }
  }
}

Result<std::string> LoadPlan(kube::KubeApi& api, const launch::TerraformObject& object,
                             const std::string& plan_id, std::string_view sha256) {
  if (sha256.empty())
    return MakeError(ErrorKind::kNotFound, "plan " + plan_id +
                                               " has no digest in the object's status (an older "
                                               "berth-controller made it): it is planned again");
  std::string plan;
  size_t chunks = 1;
  std::string digest;
  for (size_t n = 0; n < chunks; ++n) {
    auto secret = api.Get(kube::kSecrets, object.ns, ChunkName(object, n));
    if (!secret) return secret.error();
    const json annotations = (*secret)["metadata"].value("annotations", json::object());
    if (annotations.value(kPlanIdAnnotation, "") != plan_id)
      return MakeError(ErrorKind::kNotFound, "plan " + plan_id + " is no longer kept");
    if (n == 0) {
      digest = annotations.value(kDigestAnnotation, "");
      chunks = std::strtoul(annotations.value(kChunksAnnotation, "0").c_str(), nullptr, 10);
      if (chunks == 0 || chunks > 4096)
        return MakeError(ErrorKind::kInternal, "plan " + plan_id + ": bad chunk count");
    }
    const json data = (*secret).value("data", json::object());
    auto bytes = Base64Decode(data.value("tfplan", ""));
    if (!bytes) return bytes.error();
    plan += *bytes;
  }
  const std::string actual = crypto::Sha256Hex(plan);
  if (actual != digest)
    return MakeError(ErrorKind::kInternal, "plan " + plan_id + " does not match its digest");
  if (actual != sha256)
    return MakeError(ErrorKind::kInternal, "plan " + plan_id +
                                               " is not the plan that was made: its Secrets were "
                                               "rewritten, digest included");
  return plan;
}

}  // namespace berth::controller
