#include "store/sealing.h"

namespace berth::store {

const std::vector<SealedColumn>& SealedColumns() {
  static const std::vector<SealedColumn> kColumns = {
      {"deployments", "spec", {{"org_id"}, {"id"}}, kSpecContext},
      {"deployment_artifacts",
       "content",
       {{"org_id"}, {"deployment_id"}, {"name"}},
       kArtifactContext},
      {"state_versions", "content", {{"state_key"}, {"version", true}}, kStateContext},
      {"shared_secrets", "value", {{"name"}}, kSharedSecretContext},
  };
  return kColumns;
}

crypto::SealBinding SpecCell(std::string_view org, std::string_view id) {
  return {kSpecContext, crypto::RowOf({org, id})};
}

crypto::SealBinding ArtifactCell(std::string_view org, std::string_view deployment,
                                 std::string_view name) {
  return {kArtifactContext, crypto::RowOf({org, deployment, name})};
}

crypto::SealBinding StateCell(std::string_view key, int64_t version) {
  return {kStateContext, crypto::RowOf({key, std::to_string(version)})};
}

crypto::SealBinding SharedSecretCell(std::string_view name) {
  return {kSharedSecretContext, crypto::RowOf({name})};
}

std::string SealValue(const crypto::KeyRing* keys, std::string_view value,
                      const crypto::SealBinding& where) {
  return keys ? keys->Seal(value, where) : std::string(value);
}

Result<std::string> OpenValue(const crypto::KeyRing* keys, std::string_view stored,
                              const crypto::SealBinding& where) {
  if (keys) return keys->Open(stored, where);
  if (crypto::KeyRing::IsSealed(stored))
    return MakeError(ErrorKind::kFailedPrecondition, "a value in " + std::string(where.column) +
                                                         " is sealed and berthd has no keys");
  return std::string(stored);
}

}  // namespace berth::store
