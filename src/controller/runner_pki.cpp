#include "controller/runner_pki.h"

#include <arpa/inet.h>

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr char kCertificateKey[] = "tls.crt";
constexpr char kKeyKey[] = "tls.key";
constexpr char kCaKey[] = "ca.crt";

// A Secret's data entry, decoded; empty when absent or not base64.
std::string SecretValue(const json& secret, const char* key) {
  const json data = secret.contains("data") ? secret["data"] : json::object();
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) return "";
  auto decoded = Base64Decode(data[key].get<std::string>());
  return decoded ? *decoded : "";
}

json SecretData(const crypto::IssuedCertificate& issued, const std::string& ca_pem) {
  json data = {{kCertificateKey, Base64Encode(issued.certificate_pem)},
               {kKeyKey, Base64Encode(issued.key.pem)}};
  if (!ca_pem.empty()) data[kCaKey] = Base64Encode(ca_pem);
  return data;
}

}  // namespace

std::string RunnerServerName(const launch::TerraformObject& object) {
  return launch::ServedPodName(object.name) + "." + object.ns;
}

Result<std::unique_ptr<RunnerPki>> RunnerPki::LoadOrCreate(kube::KubeApi& api, Clock& clock,
                                                           PkiOptions options) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto secret = api.Get(kube::kSecrets, options.ns, options.ca_secret);
    if (secret) {
      crypto::IssuedCertificate ca{SecretValue(*secret, kCertificateKey),
                                   {SecretValue(*secret, kKeyKey)}};
      if (!crypto::CertificateValidity(ca.certificate_pem) || ca.key.pem.empty()) {
        return MakeError(ErrorKind::kFailedPrecondition,
                         "Secret " + options.ns + "/" + options.ca_secret +
                             " holds no CA certificate and key (tls.crt, tls.key): delete it "
                             "and the controller makes a new CA");
      }
      return std::unique_ptr<RunnerPki>(
          new RunnerPki(api, clock, std::move(options), std::move(ca)));
    }
    if (secret.error().kind != ErrorKind::kNotFound) return secret.error();
    auto ca = crypto::CreateCertificateAuthority("berth-controller-ca", options.ca_validity);
    if (!ca) return ca.error();
    json created = {{"apiVersion", "v1"},
                    {"kind", "Secret"},
                    {"type", "Opaque"},
                    {"metadata",
                     {{"name", options.ca_secret},
                      {"namespace", options.ns},
                      {"labels", {{"app.kubernetes.io/managed-by", "berth-controller"}}}}},
                    {"data", SecretData(*ca, "")}};
    auto made = api.Create(kube::kSecrets, options.ns, created);
    if (made) {
      return std::unique_ptr<RunnerPki>(
          new RunnerPki(api, clock, std::move(options), std::move(*ca)));
    }
    if (made.error().kind != ErrorKind::kAlreadyExists) return made.error();
    // Another replica made it first: read theirs.
  }
  return MakeError(ErrorKind::kConflict, "the CA Secret keeps changing: " + options.ca_secret);
}

bool RunnerPki::Fresh(const std::string& certificate_pem) {
  auto validity = crypto::CertificateValidity(certificate_pem);
  if (!validity) return false;
  const auto life = validity->not_after - validity->not_before;
  return validity->not_after - clock_.Wall() > life / 3;
}

Result<crypto::IssuedCertificate> RunnerPki::ClientCertificate() {
  MutexLock lock(mutex_);
  if (!client_ || !Fresh(client_->certificate_pem)) {
    auto issued = crypto::IssueCertificate({.common_name = "berth-controller",
                                            .use = crypto::CertificateUse::kClient,
                                            .validity = options_.certificate_validity},
                                           ca_);
    if (!issued) return issued.error();
    client_ = std::move(*issued);
  }
  return *client_;
}

Result<std::string> RunnerPki::EnsureRunnerSecret(const launch::TerraformObject& object) {
  const std::string name = launch::TlsSecretName(object.name);
  auto existing = api_.Get(kube::kSecrets, object.ns, name);
  if (!existing && existing.error().kind != ErrorKind::kNotFound) return existing.error();
  if (existing) {
    const std::string certificate = SecretValue(*existing, kCertificateKey);
    // Ours only if it names our CA and is fresh; anything else written there is replaced.
    if (SecretValue(*existing, kCaKey) == ca_.certificate_pem && Fresh(certificate) &&
        !SecretValue(*existing, kKeyKey).empty())
      return crypto::CertificateFingerprint(certificate);
  }
  const std::string server_name = RunnerServerName(object);
  auto issued = crypto::IssueCertificate({.common_name = launch::ServedPodName(object.name),
                                          .dns_names = {server_name},
                                          .use = crypto::CertificateUse::kServer,
                                          .validity = options_.certificate_validity},
                                         ca_);
  if (!issued) return issued.error();
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata",
                  {{"name", name},
                   {"namespace", object.ns},
                   {"labels", {{"app.kubernetes.io/managed-by", "berth-controller"}}},
                   {"ownerReferences",
                    {{{"apiVersion", launch::kTerraformApiVersion},
                      {"kind", launch::kTerraformKind},
                      {"name", object.name},
                      {"uid", object.uid},
                      {"controller", true}}}}}},
                 {"data", SecretData(*issued, ca_.certificate_pem)}};
  auto written = existing ? api_.Patch(kube::kSecrets, object.ns, name, kube::PatchType::kMerge,
                                       {{"metadata", secret["metadata"]}, {"data", secret["data"]}},
                                       options_.field_manager)
                          : api_.Create(kube::kSecrets, object.ns, secret);
  if (!written) return written.error();
  return crypto::CertificateFingerprint(issued->certificate_pem);
}

std::string RunnerPki::StateTokenKey() const {
  return crypto::HmacSha256Hex(ca_.key.pem, "berth-controller state tokens v1");
}

Result<crypto::IssuedCertificate> RunnerPki::StateServerCertificate(const std::string& host) const {
  in6_addr address{};
  const bool ip = inet_pton(AF_INET, host.c_str(), &address) == 1 ||
                  inet_pton(AF_INET6, host.c_str(), &address) == 1;
  crypto::CertificateRequest request{.common_name = "berth-controller-state",
                                     .use = crypto::CertificateUse::kServer,
                                     .validity = options_.state_certificate_validity};
  (ip ? request.ip_addresses : request.dns_names).push_back(host);
  return crypto::IssueCertificate(request, ca_);
}

}  // namespace berth::controller
