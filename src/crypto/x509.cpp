// X.509 issuing with OpenSSL 3. Every OpenSSL object is owned by a unique_ptr with its free
// function, so that an early return leaks nothing.
#include "crypto/x509.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "crypto/openssl_support.h"

namespace berth::crypto {
namespace {

using openssl::Bio;
using openssl::Deleter;
using openssl::PKey;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Ext = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

Error OpenSslError(const std::string& what) { return openssl::LastError(what); }

std::string BioString(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

Result<PKey> ParsePrivateKey(const std::string& pem) { return openssl::ReadPrivateKey(pem); }

Result<Cert> ParseCertificate(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return OpenSslError("certificate");
  return cert;
}

Result<void> AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslError("extension " + std::string(OBJ_nid2sn(nid)));
  }
  return {};
}

std::string SubjectAltNames(const CertificateRequest& request) {
  std::string names;
  auto add = [&names](const std::string& kind, const std::string& value) {
    if (!names.empty()) names += ",";
    names += kind + ":" + value;
  };
  for (const auto& dns : request.dns_names) add("DNS", dns);
  for (const auto& ip : request.ip_addresses) add("IP", ip);
  return names;
}

// Builds and signs one certificate; issuer and issuer_key null means self-signed.
Result<IssuedCertificate> Build(const CertificateRequest& request, X509* issuer,
                                EVP_PKEY* issuer_key) {
  auto key_pem = PrivateKey::GenerateEcP256();
  if (!key_pem) return key_pem.error();
  auto key = ParsePrivateKey(key_pem->pem);
  if (!key) return key.error();

  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;  // a positive serial (RFC 5280 4.1.2.2)
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // tolerate a little clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(request.validity.count()));
  X509_set_pubkey(cert.get(), key->get());

  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& org : request.organizations) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(request.common_name.c_str()),
                             -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));

  std::vector<std::pair<int, std::string>> extensions;
  switch (request.use) {
    case CertificateUse::kCertificateAuthority:
      extensions = {{NID_basic_constraints, "critical,CA:TRUE"},
                    {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"}};
      break;
    case CertificateUse::kServer:
      extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                    {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                    {NID_ext_key_usage, "serverAuth"}};
      break;
    case CertificateUse::kClient:
      extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                    {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                    {NID_ext_key_usage, "clientAuth"}};
      break;
  }
  extensions.emplace_back(NID_subject_key_identifier, "hash");
  if (issuer) extensions.emplace_back(NID_authority_key_identifier, "keyid:always");
  std::string sans = SubjectAltNames(request);
  if (!sans.empty()) extensions.emplace_back(NID_subject_alt_name, sans);
  for (const auto& [nid, value] : extensions) {
    if (auto added = AddExtension(cert.get(), signer, nid, value); !added) return added.error();
  }

  if (X509_sign(cert.get(), issuer_key ? issuer_key : key->get(), EVP_sha256()) == 0) {
    return OpenSslError("sign certificate");
  }
  Bio out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(out.get(), cert.get()) != 1) return OpenSslError("encode certificate");
  return IssuedCertificate{BioString(out.get()), std::move(*key_pem)};
}

}  // namespace

Result<PrivateKey> PrivateKey::GenerateEcP256() {
  PKey key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("generate P-256 key");
  Bio out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("encode private key");
  }
  return PrivateKey{BioString(out.get())};
}

Result<std::string> PrivateKey::PublicKeyPem() const {
  auto key = ParsePrivateKey(pem);
  if (!key) return key.error();
  Bio out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PUBKEY(out.get(), key->get()) != 1) return OpenSslError("encode public key");
  return BioString(out.get());
}

Result<IssuedCertificate> CreateCertificateAuthority(const std::string& common_name,
                                                     std::chrono::seconds validity) {
  CertificateRequest request;
  request.common_name = common_name;
  request.use = CertificateUse::kCertificateAuthority;
  request.validity = validity;
  return Build(request, nullptr, nullptr);
}

Result<IssuedCertificate> IssueCertificate(const CertificateRequest& request,
                                           const IssuedCertificate& authority) {
  auto ca_cert = ParseCertificate(authority.certificate_pem);
  if (!ca_cert) return ca_cert.error();
  auto ca_key = ParsePrivateKey(authority.key.pem);
  if (!ca_key) return ca_key.error();
  return Build(request, ca_cert->get(), ca_key->get());
}

namespace {

Result<std::chrono::system_clock::time_point> TimePoint(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return OpenSslError("validity");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

Result<Validity> CertificateValidity(const std::string& certificate_pem) {
  auto cert = ParseCertificate(certificate_pem);
  if (!cert) return cert.error();
  auto not_before = TimePoint(X509_get0_notBefore(cert->get()));
  if (!not_before) return not_before.error();
  auto not_after = TimePoint(X509_get0_notAfter(cert->get()));
  if (!not_after) return not_after.error();
  return Validity{*not_before, *not_after};
}

Result<std::string> CertificateFingerprint(const std::string& certificate_pem) {
  auto cert = ParseCertificate(certificate_pem);
  if (!cert) return cert.error();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(cert->get(), EVP_sha256(), digest, &size) != 1)
    return OpenSslError("fingerprint");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace berth::crypto
