#include "kube/informer.h"

#include <algorithm>

namespace berth::kube {
namespace {

std::string KeyOf(const json& object) {
  const json& metadata = object["metadata"];
  return metadata.value("namespace", "") + "/" + metadata.value("name", "");
}

std::string VersionOf(const json& object) {
  return object["metadata"].value("resourceVersion", "");
}

}  // namespace

Informer::Informer(KubeApi& api, const ResourceKind& kind, InformerOptions options)
    : api_(api), kind_(kind), options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void Informer::Stop() {
  stopping_ = true;
  { MutexLock lock(mutex_); }  // a waiter between its check and its wait gets the notify
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) {
    return synced_ || stopping_.load();
  }) && synced_;
}

std::optional<json> Informer::Get(const std::string& ns, const std::string& name) const {
  MutexLock lock(mutex_);
  auto it = cache_.find(ns + "/" + name);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::List() const {
  MutexLock lock(mutex_);
  std::vector<json> objects;
  objects.reserve(cache_.size());
  for (const auto& [key, object] : cache_) objects.push_back(object);
  return objects;
}

InformerStats Informer::Stats() const {
  MutexLock lock(mutex_);
  return stats_;
}

void Informer::Loop() {
  auto backoff = options_.initial_backoff;
  bool need_list = true;
  while (!stopping_) {
    Result<void> step = need_list ? Relist() : WatchOnce();
    if (stopping_) break;
    if (step) {
      // A list leads to a watch; a watch the server closed in time is simply renewed.
      need_list = false;
      backoff = options_.initial_backoff;
      NoteAnswered();
      continue;
    }
    if (step.error().reason == kReasonExpired) {
      need_list = true;  // the versions we hold are compacted away: start over, no wait
      continue;
    }
    if (!lost_.exchange(true) && options_.on_lost) options_.on_lost(step.error());
    SleepFor(backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void DropManagedFields(json& object) {
  if (object.contains("metadata") && object["metadata"].is_object())
    object["metadata"].erase("managedFields");
}

Result<void> Informer::Relist() {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  auto list = api_.List(kind_, options_.ns, list_options);
  if (!list) return list.error();
  std::map<std::string, json> fresh;
  for (json& item : list->items) {
    if (options_.transform) options_.transform(item);
    std::string key = KeyOf(item);
    fresh.emplace(std::move(key), std::move(item));
  }
  std::vector<std::pair<std::string, json>> changes;
  {
    MutexLock lock(mutex_);
    for (const auto& [key, object] : cache_) {
      if (!fresh.contains(key)) changes.emplace_back("DELETED", object);
    }
    for (const auto& [key, object] : fresh) {
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        changes.emplace_back("ADDED", object);
      } else if (VersionOf(old->second) != VersionOf(object)) {
        changes.emplace_back("MODIFIED", object);
      }
    }
    cache_ = std::move(fresh);
    resource_version_ = list->resource_version;
    ++stats_.lists;
    stats_.events += changes.size();
    synced_ = true;
  }
  changed_.notify_all();
  for (const auto& [type, object] : changes) Deliver(type, object);
  return {};
}

Result<void> Informer::WatchOnce() {
  WatchOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.timeout_seconds = options_.watch_timeout_seconds;
  {
    MutexLock lock(mutex_);
    watch_options.resource_version = resource_version_;
    ++stats_.watches;
  }
  return api_.Watch(
      kind_, options_.ns, watch_options,
      [this](WatchEvent event) {
        NoteAnswered();  // a renewed watch may carry on for minutes before it returns
        if (options_.transform && event.type != "BOOKMARK") options_.transform(event.object);
        Apply(event.type, event.object);
        return !stopping_.load();
      },
      [this] { return stopping_.load(); });
}

void Informer::NoteAnswered() {
  if (lost_.exchange(false) && options_.on_regained) options_.on_regained();
}

void Informer::Apply(const std::string& type, const json& object) {
  std::string version = VersionOf(object);
  bool deliver = false;
  {
    MutexLock lock(mutex_);
    if (!version.empty()) resource_version_ = version;
    if (type == "BOOKMARK") return;
    std::string key = KeyOf(object);
    auto it = cache_.find(key);
    if (type == "DELETED") {
      deliver = it != cache_.end();
      if (deliver) cache_.erase(it);
    } else if (type == "ADDED" || type == "MODIFIED") {
      deliver = it == cache_.end() || VersionOf(it->second) != version;
      if (deliver) cache_[key] = object;
    }
    if (deliver) ++stats_.events;
  }
  if (deliver) Deliver(type, object);
}

void Informer::Deliver(const std::string& type, const json& object) {
  for (const Handler& handler : handlers_) handler(type, object);
}

void Informer::SleepFor(std::chrono::milliseconds delay) {
  MutexLock lock(mutex_);
  changed_.wait_for(mutex_, delay, [&] { return stopping_.load(); });
}

}  // namespace berth::kube
