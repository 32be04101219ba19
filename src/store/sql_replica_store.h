// ReplicaStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/pool.h"
#include "store/replica_store.h"

namespace berth::store {

std::unique_ptr<ReplicaStore> MakeSqlReplicaStore(Pool& pool);

}  // namespace berth::store
