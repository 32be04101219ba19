// The berthd processes ("replicas") that share one database, each with a lease it renews while
// it lives. A run belongs to the replica that launched it (store/deployment_store.h, owner);
// another replica takes it over only once that lease has ended.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::store {

struct ReplicaLease {
  std::string id;           // stable across a replica's restarts (its data folder keeps it)
  std::string host;         // the machine it runs on, for people
  int64_t started_at = 0;   // this start, milliseconds since the epoch
  int64_t lease_until = 0;  // alive until then unless renewed, milliseconds since the epoch
};

class ReplicaStore {
 public:
  virtual ~ReplicaStore() = default;
  // Records the replica's lease (a new row at its first start, the new lease after).
  virtual Result<void> Renew(const ReplicaLease& lease) = 0;
  // Every replica that ever ran on the database, by id.
  virtual Result<std::vector<ReplicaLease>> List() = 0;
};

}  // namespace berth::store
