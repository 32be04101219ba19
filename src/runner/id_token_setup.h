// What a run's ID token becomes for the module's providers (docs/oidc.md, "Cloud credentials"):
// the token in a private file that BERTH_ID_TOKEN_FILE names and, for each cloud the
// environment federates with, what that cloud's SDKs and TF providers read: AWS's
// web-identity variables, Azure's OIDC variables, Google's external-account credentials file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::runner {

struct IdTokenSetup {
  std::string token;             // to mask in every log
  std::filesystem::path file;    // the token's file
  std::vector<std::string> env;  // NAME=value, for TF and what it runs
};

// answer: the gateway's /id-token document ({"token", "aws", "azure", "gcp"}); its files go in
// dir; run_id names the AWS session.
Result<IdTokenSetup> PlaceIdToken(const std::string& answer, const std::filesystem::path& dir,
                                  const std::string& run_id);

}  // namespace berth::runner
