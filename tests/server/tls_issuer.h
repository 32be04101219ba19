// berthd's OpenID Connect issuer on a loopback HTTPS server of the test's own CA, over a test's
// store: what a test kube-apiserver that trusts berthd (testenv::TrustJwtIssuer) fetches
// discovery and keys from.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "crypto/x509.h"
#include "kube_test_cluster.h"
#include "net/http_server.h"
#include "server/oidc/oidc_issuer.h"
#include "sys/files.h"

namespace berth::server {

struct TlsIssuer {
  // Files (the server's certificate and key) go to dir.
  static Result<std::unique_ptr<TlsIssuer>> Start(store::Store& store, Clock& clock,
                                                  const std::filesystem::path& dir,
                                                  std::chrono::seconds key_period) {
    auto ca = crypto::CreateCertificateAuthority("berthd-test-ca", std::chrono::hours(1));
    if (!ca) return ca.error();
    auto serving = crypto::IssueCertificate({.common_name = "berthd",
                                             .ip_addresses = {"127.0.0.1"},
                                             .use = crypto::CertificateUse::kServer},
                                            *ca);
    if (!serving) return serving.error();
    if (auto r = sys::WriteFileAtomic(dir / "tls.crt", serving->certificate_pem); !r)
      return r.error();
    if (auto r = sys::WriteFileAtomic(dir / "tls.key", serving->key.pem); !r) return r.error();
    auto bound = net::BindHttpServer(
        {.tls_cert_file = (dir / "tls.crt").string(), .tls_key_file = (dir / "tls.key").string()});
    if (!bound) return bound.error();
    auto made = std::make_unique<TlsIssuer>();
    made->ca_pem = ca->certificate_pem;
    made->issuer = std::make_unique<OidcIssuer>(
        store, clock,
        OidcIssuerOptions{.issuer = "https://127.0.0.1:" + std::to_string((*bound)->Port()),
                          .key_period = key_period});
    made->server = std::move(*bound);
    made->server->Serve(
        [issuer = made->issuer.get()](const net::ServerRequest& r) { return issuer->Handle(r); });
    return made;
  }
  // The apiserver started next trusts this issuer for audience, naming users prefix + sub.
  void TrustedByNextApiserver(const std::string& audience, const std::string& prefix) const {
    testenv::TrustJwtIssuer({.url = issuer->Issuer(),
                             .audience = audience,
                             .ca_pem = ca_pem,
                             .username_prefix = prefix});
  }

  ~TlsIssuer() {
    if (server) server->Stop();
  }

  std::string ca_pem;  // of the CA that signed the server's certificate
  std::unique_ptr<OidcIssuer> issuer;
  std::unique_ptr<net::HttpServer> server;
};

}  // namespace berth::server
