// This berthd as one replica of those sharing a database (store/replica_store.h).
//
// Its id is kept in its data folder, so that a berthd restarted on the same folder is the same
// replica and takes its own runs up at once (its local runners are on this machine). The
// folder is locked while berthd runs: two berthd on one folder would each take the other's
// runners for orphans and stop them. Its lease is renewed on a thread of its own, so that a
// long dispatch never lets it lapse; other replicas take its runs over once it has.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/mutex.h"
#include "store/replica_store.h"
#include "sys/fd.h"
#include "sys/logger.h"

namespace berth::server {

struct ReplicaIdentity {
  std::string id;
  std::string host;
  sys::Fd folder_lock;  // held for berthd's life
};

// The data folder's replica id (made at its first use: the host name and a random suffix),
// with the folder locked; kFailedPrecondition when another berthd holds it.
Result<ReplicaIdentity> ClaimReplicaIdentity(const std::filesystem::path& data_dir);

class ReplicaLeaseKeeper {
 public:
  // Renews the lease once before it returns (other replicas must see this one alive before it
  // owns a run), then every lease/3 until destroyed.
  static Result<std::unique_ptr<ReplicaLeaseKeeper>> Start(store::ReplicaStore& replicas,
                                                           const ReplicaIdentity& identity,
                                                           std::chrono::milliseconds lease,
                                                           sys::Logger& log);
  ~ReplicaLeaseKeeper();
  ReplicaLeaseKeeper(const ReplicaLeaseKeeper&) = delete;
  ReplicaLeaseKeeper& operator=(const ReplicaLeaseKeeper&) = delete;

 private:
  ReplicaLeaseKeeper(store::ReplicaStore& replicas, store::ReplicaLease lease,
                     std::chrono::milliseconds length, sys::Logger& log);
  Result<void> Renew();
  void Loop();

  store::ReplicaStore& replicas_;
  store::ReplicaLease lease_;
  const std::chrono::milliseconds length_;
  sys::Logger& log_;
  Mutex mutex_;
  std::condition_variable_any wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace berth::server
