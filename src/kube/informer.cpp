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
  return json::parse(it->second.text);
}

std::vector<json> Informer::List() const {
  MutexLock lock(mutex_);
  std::vector<json> objects;
  objects.reserve(cache_.size());
  for (const auto& [key, object] : cache_) objects.push_back(json::parse(object.text));
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
  // Each item becomes its cached text as its page arrives: the whole list is never held
  // parsed at once.
  std::map<std::string, Cached> fresh;
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.each_item = [&](json& item) {
    if (options_.transform) options_.transform(item);
    fresh.emplace(KeyOf(item), Cached{VersionOf(item), item.dump()});
    item = json();
  };
  auto list = api_.List(kind_, options_.ns, list_options);
  if (!list) return list.error();
  // What changed, by key; a deleted object's last text is kept to hand it on.
  std::vector<std::pair<std::string, std::string>> changed;
  std::vector<std::string> deleted;
  {
    MutexLock lock(mutex_);
    for (auto& [key, object] : cache_) {
      if (!fresh.contains(key)) deleted.push_back(std::move(object.text));
    }
    for (const auto& [key, object] : fresh) {
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        changed.emplace_back("ADDED", key);
      } else if (old->second.version != object.version) {
        changed.emplace_back("MODIFIED", key);
      }
    }
    cache_ = std::move(fresh);
    resource_version_ = list->resource_version;
    ++stats_.lists;
    stats_.events += changed.size() + deleted.size();
    synced_ = true;
  }
  changed_.notify_all();
  for (const std::string& text : deleted) Deliver("DELETED", json::parse(text));
  for (const auto& [type, key] : changed) {
    std::string text;
    {
      MutexLock lock(mutex_);
      auto it = cache_.find(key);
      if (it == cache_.end()) continue;  // a watch cannot have run meanwhile; stay safe
      text = it->second.text;
    }
    Deliver(type, json::parse(text));
  }
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
      deliver = it == cache_.end() || it->second.version != version;
      if (deliver) cache_[key] = Cached{version, object.dump()};
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
