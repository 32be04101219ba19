#include "controller/controller_loop.h"

#include <fmt/format.h>

#include "controller/dependencies.h"

namespace berth::controller {

using nlohmann::json;

ControllerLoop::ControllerLoop(kube::KubeApi& api, Reconciler& reconciler,
                               ControllerOptions options)
    : reconciler_(reconciler),
      options_(std::move(options)),
      informer_(api, kTerraforms,
                {.ns = options_.watch_namespace, .transform = kube::DropManagedFields}) {
  informer_.AddHandler(
      [this](const std::string& type, const json& object) { OnEvent(type, object); });
}

ControllerLoop::~ControllerLoop() { Stop(); }

void ControllerLoop::Start() {
  informer_.Start();
  for (int i = 0; i < std::max(1, options_.concurrency); ++i)
    workers_.emplace_back([this] { Work(); });
}

void ControllerLoop::Stop() {
  queue_.ShutDown();
  for (std::thread& worker : workers_)
    if (worker.joinable()) worker.join();
  workers_.clear();
  informer_.Stop();
}

void ControllerLoop::OnEvent(const std::string& type, const json& object) {
  const std::string key = ObjectKey(object);
  const int64_t generation = object.value("metadata", json::object()).value("generation", 0);
  std::vector<std::string> wake;
  {
    MutexLock lock(mutex_);
    auto before = seen_.find(key);
    const bool known = before != seen_.end();
    if (known) {
      for (const std::string& dependency : before->second.depends_on) {
        auto dependents = dependents_.find(dependency);
        if (dependents == dependents_.end()) continue;
        dependents->second.erase(key);
        if (dependents->second.empty()) dependents_.erase(dependents);
      }
    }
    if (type == "DELETED") {
      seen_.erase(key);  // owner references take its Pods and Secrets with it
      return;
    }
    Seen& seen = seen_[key];
    seen.depends_on = DependencyKeys(object);
    for (const std::string& dependency : seen.depends_on) dependents_[dependency].insert(key);
    std::string ready = ReadySignal(object);
    if (!ready.empty() && ready != seen.ready) {
      auto dependents = dependents_.find(key);
      if (dependents != dependents_.end())
        wake.assign(dependents->second.begin(), dependents->second.end());
    }
    seen.ready = std::move(ready);
    if (!known || seen.generation != generation) wake.push_back(key);  // else: its status only
    seen.generation = generation;
  }
  for (const std::string& woken : wake) queue_.Add(woken);
}

void ControllerLoop::Work() {
  while (auto key = queue_.Get()) {
    const size_t slash = key->find('/');
    auto object = informer_.Get(key->substr(0, slash), key->substr(slash + 1));
    if (object) {
      auto outcome = reconciler_.Reconcile(*object);
      {
        MutexLock lock(mutex_);
        ++(outcome ? succeeded_ : failed_);
      }
      if (!outcome) {
        queue_.AddAfter(*key, SpecDuration(object->value("spec", json::object()), "retryInterval",
                                           kDefaultRetryInterval));
      } else if (outcome->requeue_after.count() > 0) {
        queue_.AddAfter(*key, outcome->requeue_after);
      }
    }
    queue_.Done(*key);
  }
}

std::string ControllerLoop::MetricsText() const {
  const kube::InformerStats stats = informer_.Stats();
  MutexLock lock(mutex_);
  return fmt::format(
      "# TYPE berth_controller_reconciles_total counter\n"
      "berth_controller_reconciles_total{{result=\"ok\"}} {}\n"
      "berth_controller_reconciles_total{{result=\"error\"}} {}\n"
      "# TYPE berth_controller_queue_depth gauge\n"
      "berth_controller_queue_depth {}\n"
      "# TYPE berth_controller_informer_lists_total counter\n"
      "berth_controller_informer_lists_total {}\n"
      "# TYPE berth_controller_informer_watches_total counter\n"
      "berth_controller_informer_watches_total {}\n",
      succeeded_, failed_, queue_.Depth(), stats.lists, stats.watches);
}

}  // namespace berth::controller
