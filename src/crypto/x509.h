// Issuing X.509 certificates (RFC 5280) on OpenSSL: a CA, and server or client certificates
// signed by it. berthd issues runner certificates with it; the test environment its apiserver's.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::crypto {

// An ECDSA P-256 private key, PEM-encoded (PKCS#8).
struct PrivateKey {
  std::string pem;
  static Result<PrivateKey> GenerateEcP256();
  // The public half, PEM-encoded (SubjectPublicKeyInfo).
  Result<std::string> PublicKeyPem() const;
};

enum class CertificateUse { kCertificateAuthority, kServer, kClient };

struct CertificateRequest {
  std::string common_name;
  std::vector<std::string> organizations;  // Kubernetes reads these as the user's groups
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;
  CertificateUse use = CertificateUse::kClient;
  std::chrono::seconds validity = std::chrono::hours(24);
};

struct IssuedCertificate {
  std::string certificate_pem;
  PrivateKey key;
};

// When a certificate starts and stops being valid (RFC 5280 4.1.2.5).
struct Validity {
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;
};
Result<Validity> CertificateValidity(const std::string& certificate_pem);

// The SHA-256 of the certificate's DER encoding, in hex: what names one certificate.
Result<std::string> CertificateFingerprint(const std::string& certificate_pem);

// A self-signed CA.
Result<IssuedCertificate> CreateCertificateAuthority(const std::string& common_name,
                                                     std::chrono::seconds validity);

// A certificate for request, signed by the CA, with a fresh key.
Result<IssuedCertificate> IssueCertificate(const CertificateRequest& request,
                                           const IssuedCertificate& authority);

}  // namespace berth::crypto
