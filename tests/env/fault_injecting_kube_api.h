// A real KubeApi wrapped so that a test can cut watches and keep the API away from watchers
// for a while (as a network partition or an apiserver restart would), after LevelDB's
// FaultInjectionTestEnv. Every other verb goes straight through.
#pragma once

#include <atomic>

#include "kube/kube_api.h"

namespace berth::testenv {

class FaultInjectingKubeApi final : public kube::KubeApi {
 public:
  explicit FaultInjectingKubeApi(kube::KubeApi& real) : real_(real) {}

  // Ends every watch that is open now (the watcher sees kUnavailable).
  void CutWatches() { ++cut_generation_; }
  // While down, a new watch fails at once with kUnavailable.
  void SetWatchesDown(bool down) { watches_down_ = down; }
  int WatchesOpened() const { return watches_opened_; }

  Result<nlohmann::json> Create(const kube::ResourceKind& kind, std::string_view ns,
                                const nlohmann::json& object) override {
    return real_.Create(kind, ns, object);
  }
  Result<nlohmann::json> CreateSubresource(const kube::ResourceKind& kind, std::string_view ns,
                                           std::string_view name, std::string_view subresource,
                                           const nlohmann::json& object) override {
    return real_.CreateSubresource(kind, ns, name, subresource, object);
  }
  Result<nlohmann::json> Get(const kube::ResourceKind& kind, std::string_view ns,
                             std::string_view name) override {
    return real_.Get(kind, ns, name);
  }
  Result<kube::ObjectList> List(const kube::ResourceKind& kind, std::string_view ns,
                                const kube::ListOptions& options) override {
    return real_.List(kind, ns, options);
  }
  Result<nlohmann::json> Patch(const kube::ResourceKind& kind, std::string_view ns,
                               std::string_view name, kube::PatchType type,
                               const nlohmann::json& patch, std::string_view field_manager,
                               std::string_view subresource) override {
    return real_.Patch(kind, ns, name, type, patch, field_manager, subresource);
  }
  Result<void> Delete(const kube::ResourceKind& kind, std::string_view ns, std::string_view name,
                      const kube::DeleteOptions& options) override {
    return real_.Delete(kind, ns, name, options);
  }
  Result<void> Watch(const kube::ResourceKind& kind, std::string_view ns,
                     const kube::WatchOptions& options,
                     const std::function<bool(kube::WatchEvent)>& on_event,
                     const std::function<bool()>& cancelled) override {
    if (watches_down_) return MakeError(ErrorKind::kUnavailable, "watches are down (injected)");
    ++watches_opened_;
    int generation = cut_generation_;
    auto result = real_.Watch(kind, ns, options, on_event,
                              [&] { return cancelled() || cut_generation_ != generation; });
    if (cut_generation_ != generation)
      return MakeError(ErrorKind::kUnavailable, "watch cut (injected)");
    return result;
  }

 private:
  kube::KubeApi& real_;
  std::atomic<int> cut_generation_{0};
  std::atomic<bool> watches_down_{false};
  std::atomic<int> watches_opened_{0};
};

}  // namespace berth::testenv
