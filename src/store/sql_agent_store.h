// AgentStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/agent_store.h"
#include "store/pool.h"

namespace berth::store {

std::unique_ptr<AgentStore> MakeSqlAgentStore(Pool& pool);

}  // namespace berth::store
