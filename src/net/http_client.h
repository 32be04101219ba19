// One HTTP client interface for berthd, the CLI, the agent and the tests. Proxy variables
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) are honoured by the implementation.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace berth::net {

struct TlsConfig {
  std::string ca_pem;           // trust only this CA; empty: the system's trust store
  std::string client_cert_pem;  // mTLS identity; empty: none
  std::string client_key_pem;
  bool insecure_skip_verify = false;  // only when a user asked for it by name
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
  std::string proxy;  // empty: HTTP(S)_PROXY and NO_PROXY from the environment
  // For a long response read as it arrives (a watch): each piece of the body goes here instead
  // of into HttpResponse::body; returning false ends the transfer (kCancelled).
  std::function<bool(std::string_view)> on_body;
  // Asked about once a second while the transfer runs: true ends it (kCancelled).
  std::function<bool()> cancelled;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // A response of any status is a success here; an error means no response arrived.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

// libcurl: proxies, HTTP/2, connection reuse. For berthd, the CLI, the agent.
std::unique_ptr<HttpClient> MakeCurlHttpClient(TlsConfig tls = {});
// OpenSSL alone, for the static runner: HTTP/1.1, one connection per request, no proxy.
std::unique_ptr<HttpClient> MakeOpenSslHttpClient(TlsConfig tls = {});

}  // namespace berth::net
