// spec.sourceRef: a Flux source (GitRepository, OCIRepository or Bucket of
// source.toolkit.fluxcd.io/v1) in the object's own namespace. Flux's source-controller fetched
// it; its status.artifact says where the tar.gz is and its digest, which the download must
// match before anything runs.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "controller/terraform_object.h"
#include "core/error.h"
#include "kube/kube_api.h"
#include "net/http_client.h"

namespace berth::controller {

struct FluxArtifact {
  std::string url;
  std::string digest;    // "sha256:<hex>"
  std::string revision;  // "main@sha1:<commit>" and the like
};

// The artifact the object's sourceRef advertises; an error names the field or says why there
// is none yet (Unavailable: the source is not ready).
Result<FluxArtifact> ReadFluxArtifact(kube::KubeApi& api, const launch::TerraformObject& object);

// Downloads the artifact to dest, at most max_bytes, and checks its digest.
Result<void> DownloadArtifact(net::HttpClient& http, const FluxArtifact& artifact,
                              const std::filesystem::path& dest, size_t max_bytes);

}  // namespace berth::controller
