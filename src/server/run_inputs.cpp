#include "server/run_inputs.h"

#include "crypto/digest.h"

namespace berth::server {

std::string RenderInputs(const store::Deployment& deployment) {
  // nlohmann's objects are ordered by key: the same variables always render the same bytes.
  return deployment.spec.variables.dump();
}

std::string InputsHash(const std::string& rendered) {
  return "sha256:" + crypto::Sha256Hex(rendered);
}

}  // namespace berth::server
