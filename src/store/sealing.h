// The columns berthd keeps sealed at rest when it has keys (crypto/key_ring.h): deployment
// specs (their variables), artifacts (plans, outputs, rescued states), state versions and
// shared secrets (the run-token signing seed). Each value is bound to its column and row; with
// keys, a value in clear is refused (one written before encryption at rest stays refused until
// `berthd rotate-keys --seal-plaintext` seals it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "crypto/key_ring.h"

namespace berth::store {

struct SealedColumn {
  struct KeyColumn {
    std::string_view name;
    bool integer = false;
  };
  std::string_view table;
  std::string_view column;
  std::vector<KeyColumn> key_columns;  // the row's primary key, in RowOf's order
  // "table.column": with the row's key, the associated data a value is sealed with.
  std::string_view context;
};
const std::vector<SealedColumn>& SealedColumns();

// The contexts the stores seal and open with, one per entry of SealedColumns().
inline constexpr std::string_view kSpecContext = "deployments.spec";
inline constexpr std::string_view kArtifactContext = "deployment_artifacts.content";
inline constexpr std::string_view kStateContext = "state_versions.content";
inline constexpr std::string_view kSharedSecretContext = "shared_secrets.value";

// Where each sealed value lives, as SealedColumns() orders its row's key (Reseal binds by that
// list, the stores by these: one file holds both).
crypto::SealBinding SpecCell(std::string_view org, std::string_view id);
crypto::SealBinding ArtifactCell(std::string_view org, std::string_view deployment,
                                 std::string_view name);
crypto::SealBinding StateCell(std::string_view key, int64_t version);
crypto::SealBinding SharedSecretCell(std::string_view name);

// keys null: the value as it is (a store opened without keys, as tests do).
std::string SealValue(const crypto::KeyRing* keys, std::string_view value,
                      const crypto::SealBinding& where);
Result<std::string> OpenValue(const crypto::KeyRing* keys, std::string_view stored,
                              const crypto::SealBinding& where);

}  // namespace berth::store
