// DeploymentStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/deployment_store.h"
#include "store/pool.h"

namespace berth::crypto {
class KeyRing;
}

namespace berth::store {

// keys: what seals its secret columns (store/sealing.h); null: plaintext.
std::unique_ptr<DeploymentStore> MakeSqlDeploymentStore(Pool& pool, const crypto::KeyRing* keys);

}  // namespace berth::store
