#include "server/dispatch/left_state_locks.h"

#include "core/bounded_json.h"
#include "server/dispatch/backend_config.h"

namespace berth::server {
namespace {

using nlohmann::json;

// Where tofu's kubernetes backend keeps a lock's LockInfo (its "ID", "Who", "Operation", ...).
constexpr char kLockInfoAnnotation[] = "app.terraform.io/lock-info";

}  // namespace

Result<std::optional<std::string>> KubernetesStateLocks::BreakIfHeldBy(const StateStorage& storage,
                                                                       const EnvironmentRef& env,
                                                                       const std::string& run_id) {
  const auto* kubernetes = std::get_if<KubernetesStateStorage>(&storage);
  if (kubernetes == nullptr) return std::optional<std::string>();
  const std::string& ns = kubernetes->ns;
  const std::string name = "lock-tfstate-default-" + KubernetesSecretSuffix(env);
  auto lease = api_.Get(kube::kLeases, ns, name);
  if (!lease && lease.error().kind == ErrorKind::kNotFound) return std::optional<std::string>();
  if (!lease) return lease.error();
  const json spec = lease->value("spec", json::object());
  const json holder = spec.value("holderIdentity", json());
  if (!holder.is_string() || holder.get<std::string>().empty()) return std::optional<std::string>();
  const json annotations =
      lease->value("metadata", json::object()).value("annotations", json::object());
  json info = ParseBoundedJsonOrNull(annotations.value(kLockInfoAnnotation, ""));
  if (!info.is_object()) return std::optional<std::string>();
  const std::string who = info.value("Who", "");
  // user@host: the host is the run's when the run took it.
  if (!who.ends_with("@" + run_id) || info.value("ID", "") != holder.get<std::string>())
    return std::optional<std::string>();
  json patch = {{"metadata",
                 {{"resourceVersion", (*lease)["metadata"].value("resourceVersion", "")},
                  {"annotations", {{kLockInfoAnnotation, nullptr}}}}},
                {"spec", {{"holderIdentity", nullptr}}}};
  auto released = api_.Patch(kube::kLeases, ns, name, kube::PatchType::kMerge, patch, "berthd");
  if (!released) return released.error();
  return std::optional<std::string>("the Lease " + ns + "/" + name + " (lock " +
                                    holder.get<std::string>() + ")");
}

Result<std::optional<std::string>> StateLocksOfEachStorage::BreakIfHeldBy(
    const StateStorage& storage, const EnvironmentRef& env, const std::string& run_id) {
  for (LeftStateLocks* locks : each_) {
    auto broken = locks->BreakIfHeldBy(storage, env, run_id);
    if (!broken || *broken) return broken;
  }
  return std::optional<std::string>();
}

}  // namespace berth::server
