// A shared, watched cache of one kind of object (client-go's informer): list, then watch from
// the list's resourceVersion with bookmarks; on 410 Expired list again; on a cut, watch again
// from the last version seen, backing off while the API is away. Handlers see each change once:
// an event whose resourceVersion the cache already holds is not delivered again, and a relist
// delivers only the differences. N runs share one watch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "kube/kube_api.h"

namespace berth::kube {

struct InformerOptions {
  std::string ns;  // empty: every namespace
  std::string label_selector;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
  int watch_timeout_seconds = 300;
  // Called on the informer's thread when the API stops answering it (the first failure after
  // it was answered) and when it answers again (a list, a watch's first event or its end); it
  // retries meanwhile either way.
  std::function<void(const Error& why)> on_lost;
  std::function<void()> on_regained;
  // Applied to each object before it is cached and handed on (client-go's transform): a
  // controller drops what it never reads, such as metadata.managedFields, to keep its cache
  // small.
  std::function<void(json& object)> transform;
};

// A transform that drops metadata.managedFields: of no use to a controller that reads
// objects, and often as big as their spec.
void DropManagedFields(json& object);

struct InformerStats {
  uint64_t lists = 0;
  uint64_t watches = 0;
  uint64_t events = 0;  // delivered to handlers
};

class Informer {
 public:
  // type: ADDED, MODIFIED or DELETED; object: the new object (the last known one for DELETED).
  using Handler = std::function<void(const std::string& type, const json& object)>;

  Informer(KubeApi& api, const ResourceKind& kind, InformerOptions options);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers run on the informer's thread, in order; add them before Start.
  void AddHandler(Handler handler);
  void Start();
  void Stop();
  // True once the first list is in the cache.
  bool WaitForSync(std::chrono::milliseconds timeout) EXCLUDES(mutex_);

  std::optional<json> Get(const std::string& ns, const std::string& name) const EXCLUDES(mutex_);
  std::vector<json> List() const EXCLUDES(mutex_);
  InformerStats Stats() const EXCLUDES(mutex_);

 private:
  void Loop();
  Result<void> Relist() EXCLUDES(mutex_);
  Result<void> WatchOnce() EXCLUDES(mutex_);
  void NoteAnswered();  // on_regained, once, after on_lost
  void Apply(const std::string& type, const json& object) EXCLUDES(mutex_);
  void Deliver(const std::string& type, const json& object);
  void SleepFor(std::chrono::milliseconds delay) EXCLUDES(mutex_);

  KubeApi& api_;
  const ResourceKind& kind_;
  InformerOptions options_;
  std::vector<Handler> handlers_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> lost_{false};  // the API stopped answering, and has not answered since
  std::thread thread_;

  mutable Mutex mutex_;
  std::condition_variable_any changed_;
  // An object as the cache keeps it: its version and its JSON text, since a parsed object takes
  // several times the memory of its text (10,000 Terraform objects: docs/controller.md). Get
  // and List parse on demand.
  struct Cached {
    std::string version;
    std::string text;
  };
  std::map<std::string, Cached> cache_ GUARDED_BY(mutex_);  // by "namespace/name"
  std::string resource_version_ GUARDED_BY(mutex_);
  bool synced_ GUARDED_BY(mutex_) = false;
  InformerStats stats_ GUARDED_BY(mutex_);
};

}  // namespace berth::kube
