// The controller's work queue (client-go's workqueue): keys ("namespace/name") wait at most
// once however often they are added; a key being worked on that is added again waits until
// that work is done, so one object is never reconciled twice at once; a key can be added for
// later. Get blocks until a key is due or the queue is shut down.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/mutex.h"

namespace berth::controller {

class WorkQueue {
 public:
  void Add(const std::string& key) EXCLUDES(mutex_);
  void AddAfter(const std::string& key, std::chrono::steady_clock::duration delay) EXCLUDES(mutex_);
  // The next key to work on, or nullopt once ShutDown was called.
  std::optional<std::string> Get() EXCLUDES(mutex_);
  // The work on key is over: if it was added meanwhile, it waits again.
  void Done(const std::string& key) EXCLUDES(mutex_);
  void ShutDown() EXCLUDES(mutex_);
  size_t Depth() const EXCLUDES(mutex_);

 private:
  void AddLocked(const std::string& key) REQUIRES(mutex_);

  mutable Mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<std::string> ready_ GUARDED_BY(mutex_);
  std::set<std::string> queued_ GUARDED_BY(mutex_);       // in ready_
  std::set<std::string> working_ GUARDED_BY(mutex_);      // handed out, not Done
  std::set<std::string> added_again_ GUARDED_BY(mutex_);  // added while being worked on
  std::multimap<std::chrono::steady_clock::time_point, std::string> later_ GUARDED_BY(mutex_);
  bool shut_down_ GUARDED_BY(mutex_) = false;
};

}  // namespace berth::controller
