// HttpClient on OpenSSL alone, for the static runner (libcurl cannot link statically here).
// HTTP/1.1, one request per connection, Content-Length or chunked responses. Proxies are not
// used: the runner talks to its own cluster's API and the gateway directly.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/decimal.h"
#include "core/http_url.h"
#include "net/http_client.h"

namespace berth::net {
namespace {

// What a request line needs of a URL: the path and query, "/" when it names none.
std::string Target(const HttpUrl& url) {
  return url.rest.starts_with('/') ? url.rest : "/" + url.rest;
}

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};

Error Unavailable(const std::string& what, const std::string& context) {
  unsigned long code = ERR_get_error();
  char text[256] = "";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return MakeError(ErrorKind::kUnavailable, what + (code ? std::string(": ") + text : ""), context);
}

// Reads the whole response (the server closes after it: Connection: close).
Result<std::string> ReadAll(BIO* bio, const std::string& context) {
  std::string data;
  char buffer[16384];
  for (;;) {
    int n = BIO_read(bio, buffer, sizeof buffer);
    if (n > 0) {
      data.append(buffer, static_cast<size_t>(n));
      if (data.size() > (64u << 20))
        return MakeError(ErrorKind::kResourceExhausted, "response over 64 MiB", context);
      continue;
    }
    if (BIO_should_retry(bio)) continue;
    break;
  }
  return data;
}

Result<HttpResponse> ParseResponse(const std::string& raw, const std::string& context) {
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos || !raw.starts_with("HTTP/1.")) {
    return MakeError(ErrorKind::kUnavailable, "malformed HTTP response", context);
  }
  HttpResponse response;
  // "HTTP/1.1 200 OK": the three digits after the first space.
  auto status = ParseDecimal<int>(std::string_view(raw).substr(raw.find(' ') + 1, 3));
  if (!status) return MakeError(ErrorKind::kUnavailable, "malformed HTTP status line", context);
  response.status = *status;
  size_t line_start = raw.find("\r\n") + 2;
  while (line_start < end) {
    size_t line_end = raw.find("\r\n", line_start);
    std::string line = raw.substr(line_start, line_end - line_start);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      size_t v = line.find_first_not_of(' ', colon + 1);
      response.headers[name] = v == std::string::npos ? "" : line.substr(v);
    }
    line_start = line_end + 2;
  }
  std::string body = raw.substr(end + 4);
  if (response.headers["transfer-encoding"] == "chunked") {
    std::string decoded;
    size_t at = 0;
    for (;;) {
      size_t eol = body.find("\r\n", at);
      if (eol == std::string::npos)
        return MakeError(ErrorKind::kUnavailable, "bad chunked body", context);
      size_t size = std::stoul(body.substr(at, eol - at), nullptr, 16);
      if (size == 0) break;
      if (eol + 2 + size > body.size())
        return MakeError(ErrorKind::kUnavailable, "short chunk", context);
      decoded.append(body, eol + 2, size);
      at = eol + 2 + size + 2;
    }
    body = std::move(decoded);
  } else if (auto length = response.headers.find("content-length");
             length != response.headers.end()) {
    body.resize(std::min(body.size(), static_cast<size_t>(std::stoull(length->second))));
  }
  response.body = std::move(body);
  return response;
}

class OpenSslHttpClient final : public HttpClient {
 public:
  explicit OpenSslHttpClient(TlsConfig tls) : tls_(std::move(tls)) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    auto url = HttpUrl::Parse(request.url);
    if (!url) return url.error();
    const std::string context = request.method + " " + request.url;
    std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>> bio;
    std::unique_ptr<SSL_CTX, Deleter<SSL_CTX, SSL_CTX_free>> ctx;
    const std::string port = std::to_string(url->port);
    std::string address = url->host + ":" + port;
    if (url->host.find(':') != std::string::npos) address = "[" + url->host + "]:" + port;
    const bool tls = url->scheme == "https";
    if (tls) {
      ctx.reset(SSL_CTX_new(TLS_client_method()));
      SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
      if (auto trusted = Configure(ctx.get(), url->host); !trusted) return trusted.error();
      bio.reset(BIO_new_ssl_connect(ctx.get()));
      SSL* ssl = nullptr;
      BIO_get_ssl(bio.get(), &ssl);
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, url->host.c_str()) != 1) {
        X509_VERIFY_PARAM_set1_host(param, url->host.c_str(), 0);
        // SNI names hosts only, never an address (RFC 6066 section 3).
        SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(url->host.c_str()));
      }
      BIO_set_conn_hostname(bio.get(), address.c_str());
    } else {
      bio.reset(BIO_new_connect(address.c_str()));
    }
    if (!bio) return Unavailable("cannot create a connection", context);
    if (BIO_do_connect(bio.get()) <= 0) return Unavailable("cannot connect", context);
    // A deadline for the whole exchange: the socket's send and receive timeouts.
    int fd = -1;
    BIO_get_fd(bio.get(), &fd);
    if (fd >= 0) {
      timeval tv{static_cast<time_t>(request.timeout.count() / 1000),
                 static_cast<suseconds_t>(request.timeout.count() % 1000 * 1000)};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    if (tls && BIO_do_handshake(bio.get()) <= 0)
      return Unavailable("TLS handshake failed", context);

    std::string head =
        request.method + " " + Target(*url) + " HTTP/1.1\r\nHost: " + url->host +
        "\r\nConnection: close\r\nContent-Length: " + std::to_string(request.body.size()) + "\r\n";
    for (const auto& [name, value] : request.headers) head += name + ": " + value + "\r\n";
    head += "\r\n";
    std::string wire = head + request.body;
    size_t done = 0;
    while (done < wire.size()) {
      int n = BIO_write(bio.get(), wire.data() + done, static_cast<int>(wire.size() - done));
      if (n <= 0) {
        if (BIO_should_retry(bio.get())) continue;
        return Unavailable("cannot send the request", context);
      }
      done += static_cast<size_t>(n);
    }
    auto raw = ReadAll(bio.get(), context);
    if (!raw) return raw.error();
    auto response = ParseResponse(*raw, context);
    // Whole responses only: a streaming caller gets the body as one piece.
    if (response && request.on_body) {
      bool accepted = request.on_body(response->body);
      response->body.clear();
      if (!accepted)
        return MakeError(ErrorKind::kCancelled, "HTTP transfer ended by the caller", context);
    }
    return response;
  }

 private:
  Result<void> Configure(SSL_CTX* ctx, const std::string& host) {
    if (tls_.insecure_skip_verify) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    } else {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      if (tls_.ca_pem.empty()) {
        SSL_CTX_set_default_verify_paths(ctx);
      } else {
        std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>> pem(
            BIO_new_mem_buf(tls_.ca_pem.data(), static_cast<int>(tls_.ca_pem.size())));
        X509_STORE* store = SSL_CTX_get_cert_store(ctx);
        int added = 0;
        while (X509* cert = PEM_read_bio_X509(pem.get(), nullptr, nullptr, nullptr)) {
          added += X509_STORE_add_cert(store, cert);
          X509_free(cert);
        }
        ERR_clear_error();
        if (added == 0)
          return MakeError(ErrorKind::kInvalidArgument, "TLS: no certificate in the CA bundle",
                           host);
      }
    }
    if (!tls_.client_cert_pem.empty()) {
      std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>> cert(BIO_new_mem_buf(
          tls_.client_cert_pem.data(), static_cast<int>(tls_.client_cert_pem.size())));
      std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>> key(BIO_new_mem_buf(
          tls_.client_key_pem.data(), static_cast<int>(tls_.client_key_pem.size())));
      std::unique_ptr<X509, Deleter<X509, X509_free>> x509(
          PEM_read_bio_X509(cert.get(), nullptr, nullptr, nullptr));
      std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>> pkey(
          PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr));
      if (!x509 || !pkey || SSL_CTX_use_certificate(ctx, x509.get()) != 1 ||
          SSL_CTX_use_PrivateKey(ctx, pkey.get()) != 1) {
        return MakeError(ErrorKind::kInvalidArgument, "TLS: unusable client certificate or key",
                         host);
      }
    }
    return {};
  }

  TlsConfig tls_;
};

}  // namespace

std::unique_ptr<HttpClient> MakeOpenSslHttpClient(TlsConfig tls) {
  return std::make_unique<OpenSslHttpClient>(std::move(tls));
}

}  // namespace berth::net
