#include "controller/work_queue.h"

namespace berth::controller {

void WorkQueue::AddLocked(const std::string& key) {
  if (shut_down_) return;
  if (working_.contains(key)) {
    added_again_.insert(key);
    return;
  }
  if (queued_.insert(key).second) ready_.push_back(key);
  changed_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  MutexLock lock(mutex_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::steady_clock::duration delay) {
  MutexLock lock(mutex_);
  if (delay <= std::chrono::steady_clock::duration::zero()) {
    AddLocked(key);
    return;
  }
  later_.emplace(std::chrono::steady_clock::now() + delay, key);
  changed_.notify_all();  // a waiting Get may now wake earlier
}

std::optional<std::string> WorkQueue::Get() {
  MutexLock lock(mutex_);
  for (;;) {
    if (shut_down_) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    while (!later_.empty() && later_.begin()->first <= now) {
      AddLocked(later_.begin()->second);
      later_.erase(later_.begin());
    }
    if (!ready_.empty()) {
      std::string key = ready_.front();
      ready_.pop_front();
      queued_.erase(key);
      working_.insert(key);
      return key;
    }
    if (later_.empty()) {
      changed_.wait(mutex_);
    } else {
      // A copy: while this worker sleeps another may take that entry and free it.
      const auto due = later_.begin()->first;
      changed_.wait_until(mutex_, due);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  MutexLock lock(mutex_);
  working_.erase(key);
  if (added_again_.erase(key) > 0) AddLocked(key);
}

void WorkQueue::ShutDown() {
  MutexLock lock(mutex_);
  shut_down_ = true;
  changed_.notify_all();
}

size_t WorkQueue::Depth() const {
  MutexLock lock(mutex_);
  return ready_.size() + later_.size();
}

}  // namespace berth::controller
