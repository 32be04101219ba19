// What berthd reads and does of an environment's state that lives in storage berthd does not
// keep (an object store), for `berth state show` and `berth state unlock`: with credentials of
// its own for the environment, never a run's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/environment_ref.h"
#include "core/error.h"
#include "core/state_storage.h"

namespace berth::server {

// A state lock as TF wrote it (its LockInfo), and where it is.
struct ElsewhereLock {
  std::string where;  // s3://bucket/key.tflock
  std::string id, who, operation, created;
};

struct ElsewhereState {
  std::string where;            // s3://bucket/key
  std::optional<int64_t> size;  // nullopt: no state there yet
  std::string etag, last_modified;
  std::optional<ElsewhereLock> lock;
};

class StatesElsewhere {
 public:
  virtual ~StatesElsewhere() = default;
  // The state and its lock as the storage holds them; kFailedPrecondition, naming the type,
  // for a storage this berthd does not reach.
  virtual Result<ElsewhereState> Show(const StateStorage& storage, const EnvironmentRef& env) = 0;
  // Deletes the lock on env's state whoever holds it, only as it was read (one TF took again
  // meanwhile stays): the lock broken; kFailedPrecondition when there is none.
  virtual Result<ElsewhereLock> Unlock(const StateStorage& storage, const EnvironmentRef& env) = 0;
};

}  // namespace berth::server
