// DeploymentDataStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/deployment_data_store.h"
#include "store/pool.h"

namespace berth::store {

std::unique_ptr<DeploymentDataStore> MakeSqlDeploymentDataStore(Pool& pool);

}  // namespace berth::store
