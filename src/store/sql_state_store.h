// StateStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/pool.h"
#include "store/state_store.h"

namespace berth::store {

std::unique_ptr<StateStore> MakeSqlStateStore(Pool& pool);

}  // namespace berth::store
