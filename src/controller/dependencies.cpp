#include "controller/dependencies.h"

#include <deque>
#include <set>

namespace berth::controller {

using nlohmann::json;

namespace {

// How many objects the cycle search reads at most: dependsOn chains are short.
constexpr size_t kMaxCycleSearch = 256;

Result<json> GetByKey(kube::KubeApi& api, const std::string& key) {
  const size_t slash = key.find('/');
  return api.Get(kTerraforms, key.substr(0, slash), key.substr(slash + 1));
}

// Whether following dependsOn from `start` comes back to `start`.
bool InCycle(kube::KubeApi& api, const json& start) {
  const std::string self = ObjectKey(start);
  std::deque<std::string> next;
  for (std::string& key : DependencyKeys(start)) next.push_back(std::move(key));
  std::set<std::string> seen;
  while (!next.empty() && seen.size() < kMaxCycleSearch) {
    const std::string key = next.front();
    next.pop_front();
    if (key == self) return true;
    if (!seen.insert(key).second) continue;
    auto object = GetByKey(api, key);
    if (!object) continue;
    for (std::string& dependency : DependencyKeys(*object)) next.push_back(std::move(dependency));
  }
  return false;
}

}  // namespace

std::vector<std::string> DependencyKeys(const json& object) {
  const json metadata = object.value("metadata", json::object());
  const std::string own = metadata.value("namespace", "");
  std::vector<std::string> keys;
  for (const json& dependency :
       object.value("spec", json::object()).value("dependsOn", json::array())) {
    if (!dependency.is_object()) continue;
    const std::string ns = dependency.value("namespace", "");
    keys.push_back((ns.empty() ? own : ns) + "/" + dependency.value("name", ""));
  }
  return keys;
}

std::string ReadySignal(const json& object) {
  const json status = object.value("status", json::object());
  const int64_t generation = object.value("metadata", json::object()).value("generation", 0);
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") != "Ready") continue;
    if (c.value("status", "") != "True" || c.value("observedGeneration", int64_t{-1}) != generation)
      return "";
    return status.value("lastAppliedRevision", "") + "@" + std::to_string(generation);
  }
  return "";
}

Result<DependencyWait> CheckDependencies(kube::KubeApi& api,
                                         const launch::TerraformObject& object) {
  const json self = {{"metadata", {{"namespace", object.ns}, {"name", object.name}}},
                     {"spec", object.spec}};
  for (const std::string& key : DependencyKeys(self)) {
    auto dependency = GetByKey(api, key);
    if (!dependency && dependency.error().kind != ErrorKind::kNotFound) return dependency.error();
    if (dependency && !ReadySignal(*dependency).empty()) continue;
    // Only an object that exists can lead back here.
    if (dependency && InCycle(api, self))
      return DependencyWait{"DependencyCycle", "spec.dependsOn leads back to this object through " +
                                                   key + ": none of them can run; break the cycle"};
    return DependencyWait{"DependencyNotReady",
                          dependency ? "waiting for " + key + " to be Ready"
                                     : "waiting for " + key + ", which does not exist"};
  }
  return DependencyWait{};
}

}  // namespace berth::controller
