#include "controller/flux_source.h"

#include <fstream>

#include "crypto/digest.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr kube::ResourceKind kGitRepositories{"source.toolkit.fluxcd.io/v1", "GitRepository",
                                              "gitrepositories"};
constexpr kube::ResourceKind kOciRepositories{"source.toolkit.fluxcd.io/v1", "OCIRepository",
                                              "ocirepositories"};
constexpr kube::ResourceKind kBuckets{"source.toolkit.fluxcd.io/v1", "Bucket", "buckets"};

Error Invalid(const std::string& message) {
  return MakeError(ErrorKind::kInvalidArgument, message);
}

}  // namespace

Result<FluxArtifact> ReadFluxArtifact(kube::KubeApi& api, const launch::TerraformObject& object) {
  const json ref = object.spec.value("sourceRef", json::object());
  const std::string kind = ref.value("kind", "");
  const std::string name = ref.value("name", "");
  const kube::ResourceKind* resource = kind == "GitRepository"   ? &kGitRepositories
                                       : kind == "OCIRepository" ? &kOciRepositories
                                       : kind == "Bucket"        ? &kBuckets
                                                                 : nullptr;
  if (resource == nullptr)
    return Invalid("spec.sourceRef.kind: must be GitRepository, OCIRepository or Bucket");
  // Another namespace's source is another team's: not readable through this object.
  if (ref.value("namespace", object.ns) != object.ns)
    return Invalid("spec.sourceRef.namespace: a source in another namespace is refused");
  auto source = api.Get(*resource, object.ns, name);
  if (!source) return source.error();
  const json artifact = source->value("status", json::object()).value("artifact", json());
  if (!artifact.is_object() || !artifact.contains("url") || !artifact.contains("digest"))
    return MakeError(ErrorKind::kUnavailable, kind + " " + name + " has no artifact yet");
  FluxArtifact out{artifact.value("url", ""), artifact.value("digest", ""),
                   artifact.value("revision", "")};
  if (!out.digest.starts_with("sha256:") || out.digest.size() != 7 + 64)
    return Invalid(kind + " " + name + ": status.artifact.digest is not sha256:<hex>");
  return out;
}

Result<void> DownloadArtifact(net::HttpClient& http, const FluxArtifact& artifact,
                              const std::filesystem::path& dest, size_t max_bytes) {
  std::ofstream out(dest, std::ios::binary | std::ios::trunc);
  crypto::Sha256 digest;
  size_t received = 0;
  bool too_big = false;
  auto response = http.Send({.url = artifact.url,
                             .timeout = std::chrono::minutes(10),
                             .on_body = [&](std::string_view piece) {
                               received += piece.size();
                               if (received > max_bytes) {
                                 too_big = true;
                                 return false;
                               }
                               digest.Update(piece);
                               out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
                               return true;
                             }});
  if (too_big) {
    return MakeError(ErrorKind::kResourceExhausted, "artifact " + artifact.url + ": more than " +
                                                        std::to_string(max_bytes) + " bytes");
  }
  if (!response) return response.error();
  if (response->status != 200) {
    return MakeError(ErrorKind::kUnavailable,
                     "artifact " + artifact.url + ": HTTP " + std::to_string(response->status));
  }
  out.close();
  if (!out) return MakeError(ErrorKind::kInternal, "cannot write " + dest.string());
  if ("sha256:" + digest.HexDigest() != artifact.digest) {
    return MakeError(ErrorKind::kInvalidArgument,
                     "artifact " + artifact.url + " does not match its digest " + artifact.digest);
  }
  return {};
}

}  // namespace berth::controller
