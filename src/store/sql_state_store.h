// StateStore on the store's SQL connections (SQLite or PostgreSQL).
#pragma once

#include <memory>

#include "store/pool.h"
#include "store/state_store.h"

namespace berth::crypto {
class KeyRing;
}

namespace berth::store {

// keys: what seals its secret columns (store/sealing.h); null: plaintext.
std::unique_ptr<StateStore> MakeSqlStateStore(Pool& pool, const crypto::KeyRing* keys);

}  // namespace berth::store
