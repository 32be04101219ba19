// A fixed set of connections to one database; a caller borrows one for a whole operation.
// Shared by the store's parts (records, state).
#pragma once

#include <condition_variable>
#include <memory>
#include <vector>

#include "core/mutex.h"
#include "store/sql.h"

namespace berth::store {

class Pool {
 public:
  void Add(std::unique_ptr<SqlConnection> c) {
    MutexLock lock(mutex_);
    free_.push_back(std::move(c));
  }

  class Lease {
   public:
    Lease(Pool& pool, std::unique_ptr<SqlConnection> c) : pool_(pool), c_(std::move(c)) {}
    ~Lease() { pool_.Return(std::move(c_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    SqlConnection& operator*() { return *c_; }
    SqlConnection* operator->() { return c_.get(); }

   private:
    Pool& pool_;
    std::unique_ptr<SqlConnection> c_;
  };

  Lease Borrow() {
    mutex_.lock();
    while (free_.empty()) available_.wait(mutex_);
    auto c = std::move(free_.back());
    free_.pop_back();
    mutex_.unlock();
    return Lease(*this, std::move(c));
  }

 private:
  void Return(std::unique_ptr<SqlConnection> c) {
    {
      MutexLock lock(mutex_);
      free_.push_back(std::move(c));
    }
    available_.notify_one();
  }

  Mutex mutex_;
  std::condition_variable_any available_;
  std::vector<std::unique_ptr<SqlConnection>> free_ GUARDED_BY(mutex_);
};

}  // namespace berth::store
