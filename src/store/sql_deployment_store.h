// DeploymentStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/deployment_store.h"
#include "store/pool.h"

namespace berth::store {

std::unique_ptr<DeploymentStore> MakeSqlDeploymentStore(Pool& pool);

}  // namespace berth::store
