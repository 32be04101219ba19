// Issued certificates verify against their CA with OpenSSL's own verifier, carry the names and
// uses asked for, and do not verify against another CA.
#include "crypto/x509.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace berth::crypto {
namespace {

std::unique_ptr<X509, decltype(&X509_free)> Parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  return {PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free};
}

// OpenSSL's chain verification with purpose checks for the given use.
bool Verifies(const std::string& leaf_pem, const std::string& ca_pem, int purpose) {
  auto leaf = Parse(leaf_pem);
  auto ca = Parse(ca_pem);
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca.get());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  return X509_verify_cert(ctx.get()) == 1;
}

TEST(X509, AServerCertificateVerifiesForServersOnlyAndHasItsNames) {
  auto ca = CreateCertificateAuthority("test-ca", std::chrono::hours(1));
  ASSERT_TRUE(ca) << ca.error().message;
  CertificateRequest request{.common_name = "server",
                             .dns_names = {"localhost"},
                             .ip_addresses = {"127.0.0.1"},
                             .use = CertificateUse::kServer};
  auto cert = IssueCertificate(request, *ca);
  ASSERT_TRUE(cert) << cert.error().message;
  EXPECT_TRUE(Verifies(cert->certificate_pem, ca->certificate_pem, X509_PURPOSE_SSL_SERVER));
  EXPECT_FALSE(Verifies(cert->certificate_pem, ca->certificate_pem, X509_PURPOSE_SSL_CLIENT));
  auto parsed = Parse(cert->certificate_pem);
  EXPECT_EQ(X509_check_host(parsed.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(parsed.get(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(parsed.get(), "example.com", 0, 0, nullptr), 1);
}

TEST(X509, AClientCertificateCarriesItsGroupsAsOrganizations) {
  auto ca = CreateCertificateAuthority("test-ca", std::chrono::hours(1));
  ASSERT_TRUE(ca);
  auto cert =
      IssueCertificate({.common_name = "alice", .organizations = {"team-a", "team-b"}}, *ca);
  ASSERT_TRUE(cert);
  EXPECT_TRUE(Verifies(cert->certificate_pem, ca->certificate_pem, X509_PURPOSE_SSL_CLIENT));
  auto parsed = Parse(cert->certificate_pem);
  char subject[256];
  X509_NAME_oneline(X509_get_subject_name(parsed.get()), subject, sizeof subject);
  EXPECT_STREQ(subject, "/O=team-a/O=team-b/CN=alice");
}

TEST(X509, ACertificateDoesNotVerifyAgainstAnotherAuthority) {
  auto ca = CreateCertificateAuthority("test-ca", std::chrono::hours(1));
  auto other = CreateCertificateAuthority("other-ca", std::chrono::hours(1));
  ASSERT_TRUE(ca && other);
  auto cert = IssueCertificate({.common_name = "x"}, *ca);
  ASSERT_TRUE(cert);
  EXPECT_FALSE(Verifies(cert->certificate_pem, other->certificate_pem, X509_PURPOSE_SSL_CLIENT));
}

TEST(X509, APublicKeyIsDerivedFromThePrivateKey) {
  auto key = PrivateKey::GenerateEcP256();
  ASSERT_TRUE(key);
  auto pub = key->PublicKeyPem();
  ASSERT_TRUE(pub);
  EXPECT_TRUE(pub->starts_with("-----BEGIN PUBLIC KEY-----"));
  EXPECT_FALSE(PrivateKey{"not a key"}.PublicKeyPem());
}

}  // namespace
}  // namespace berth::crypto

namespace berth::crypto {
namespace {

TEST(X509, ValidityAndFingerprintAreReadBack) {
  auto ca = CreateCertificateAuthority("test-ca", std::chrono::hours(2));
  ASSERT_TRUE(ca);
  auto validity = CertificateValidity(ca->certificate_pem);
  ASSERT_TRUE(validity) << validity.error().message;
  const auto now = std::chrono::system_clock::now();
  EXPECT_LE(validity->not_before, now);
  EXPECT_GT(validity->not_after, now + std::chrono::minutes(119));
  EXPECT_LE(validity->not_after, now + std::chrono::minutes(121));

  auto leaf = IssueCertificate({.common_name = "a"}, *ca);
  ASSERT_TRUE(leaf);
  auto first = CertificateFingerprint(ca->certificate_pem);
  auto second = CertificateFingerprint(leaf->certificate_pem);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->size(), 64u);
  EXPECT_NE(*first, *second);
  EXPECT_EQ(*first, CertificateFingerprint(ca->certificate_pem).value());
  EXPECT_FALSE(CertificateValidity("not a certificate"));
  EXPECT_FALSE(CertificateFingerprint(""));
}

}  // namespace
}  // namespace berth::crypto
