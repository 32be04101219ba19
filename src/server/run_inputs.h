// The inputs of a deployment's run as the runner reads them: its variables as a tfvars JSON
// document (the runner's --config), and that document's hash, which the runner checks before
// it runs anything (--inputs-hash). The dispatcher and the runner gateway both render them
// here, so the hash the one passes is the hash of what the other serves.
#pragma once

#include <string>

#include "store/deployment_store.h"

namespace berth::server {

std::string RenderInputs(const store::Deployment& deployment);
std::string InputsHash(const std::string& rendered);  // "sha256:HEX"

}  // namespace berth::server
