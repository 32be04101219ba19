// The controller's certificate authority and its runner Pods' certificates (docs/controller.md,
// "Mutual TLS"). The CA lives in a Secret of the controller's namespace, made on first start;
// each runner Pod's certificate, key and the CA's certificate live in `<name>-tf-runner-tls`
// beside its object, owned by it. Certificates are renewed when a third of their life is left.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "controller/terraform_object.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/mutex.h"
#include "crypto/x509.h"
#include "kube/kube_api.h"

namespace berth::controller {

struct PkiOptions {
  std::string ns;  // the controller's own namespace
  std::string ca_secret = "berth-controller-ca";
  std::chrono::seconds ca_validity = std::chrono::hours(24 * 365 * 5);
  std::chrono::seconds certificate_validity = std::chrono::hours(24);  // runners' and ours
  std::chrono::seconds state_certificate_validity = std::chrono::hours(24 * 365);
  std::string field_manager = "berth-controller";
};

// The name a runner Pod's certificate carries, and which the controller checks when it dials.
std::string RunnerServerName(const launch::TerraformObject& object);

class RunnerPki {
 public:
  // Reads the CA from its Secret, or makes it (when two replicas race, both end up with the
  // winner's).
  static Result<std::unique_ptr<RunnerPki>> LoadOrCreate(kube::KubeApi& api, Clock& clock,
                                                         PkiOptions options);

  const std::string& CaPem() const { return ca_.certificate_pem; }
  // The controller's client certificate (common name berth-controller), renewed as it ages.
  Result<crypto::IssuedCertificate> ClientCertificate() EXCLUDES(mutex_);
  // Makes `<name>-tf-runner-tls` hold a certificate of this CA for the object's runner with
  // more than a third of its life left (writing a new one when not) and returns that
  // certificate's fingerprint: a kept Pod started with another one is replaced.
  Result<std::string> EnsureRunnerSecret(const launch::TerraformObject& object);
  // The key of the state service's tokens (controller/state_tokens.h), derived from the CA's
  // key: every replica has the same one and none is stored.
  std::string StateTokenKey() const;
  // The state service's certificate for host (a DNS name or an IP address), valid as long as
  // certificates of the CA may be: the service loads it once, at the controller's start.
  Result<crypto::IssuedCertificate> StateServerCertificate(const std::string& host) const;

 private:
  RunnerPki(kube::KubeApi& api, Clock& clock, PkiOptions options, crypto::IssuedCertificate ca)
      : api_(api), clock_(clock), options_(std::move(options)), ca_(std::move(ca)) {}
  bool Fresh(const std::string& certificate_pem);

  kube::KubeApi& api_;
  Clock& clock_;
  const PkiOptions options_;
  const crypto::IssuedCertificate ca_;
  Mutex mutex_;
  std::optional<crypto::IssuedCertificate> client_ GUARDED_BY(mutex_);
};

}  // namespace berth::controller
