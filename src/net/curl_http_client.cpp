// HttpClient on libcurl. One easy handle per request keeps it thread-safe without locks; TLS
// material is handed over as in-memory blobs, never written to disk.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "net/http_client.h"

namespace berth::net {
namespace {

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t AppendHeader(char* data, size_t size, size_t count, void* user) {
  std::string line(data, size * count);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    auto first = value.find_first_not_of(" \t");
    auto last = value.find_last_not_of(" \t\r\n");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    (*static_cast<std::map<std::string, std::string>*>(user))[name] = value;
  }
  return size * count;
}

struct Streaming {
  const HttpRequest* request = nullptr;
  bool stopped = false;
};

size_t StreamBody(char* data, size_t size, size_t count, void* user) {
  auto* streaming = static_cast<Streaming*>(user);
  if (!streaming->request->on_body(std::string_view(data, size * count))) {
    streaming->stopped = true;
    return 0;  // curl ends the transfer with CURLE_WRITE_ERROR
  }
  return size * count;
}

int CheckCancel(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* streaming = static_cast<Streaming*>(user);
  if (streaming->request->cancelled()) {
    streaming->stopped = true;
    return 1;
  }
  return 0;
}

curl_blob Blob(const std::string& pem) {
  return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
}

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(TlsConfig tls) : tls_(std::move(tls)) { GlobalInitOnce(); }

  Result<HttpResponse> Send(const HttpRequest& request) override {
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return MakeError(ErrorKind::kInternal, "curl_easy_init failed");
    CURL* h = curl.get();
    HttpResponse response;
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (!request.proxy.empty()) curl_easy_setopt(h, CURLOPT_PROXY, request.proxy.c_str());
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    Streaming streaming{&request};
    if (request.on_body) {
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, StreamBody);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &streaming);
    } else {
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
    }
    if (request.cancelled) {
      curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, CheckCancel);
      curl_easy_setopt(h, CURLOPT_XFERINFODATA, &streaming);
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, AppendHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &response.headers);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(nullptr, curl_slist_free_all);
    for (const auto& [name, value] : request.headers) {
      std::string line = name + ": " + value;
      headers.reset(curl_slist_append(headers.release(), line.c_str()));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

    curl_blob ca = Blob(tls_.ca_pem), cert = Blob(tls_.client_cert_pem),
              key = Blob(tls_.client_key_pem);
    if (!tls_.ca_pem.empty()) curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    if (!tls_.client_cert_pem.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (tls_.insecure_skip_verify) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }

    CURLcode code = curl_easy_perform(h);
    if (streaming.stopped) {
      return MakeError(ErrorKind::kCancelled, "HTTP transfer ended by the caller",
                       request.method + " " + request.url);
    }
    if (code != CURLE_OK) {
      ErrorKind kind =
          code == CURLE_OPERATION_TIMEDOUT ? ErrorKind::kDeadlineExceeded : ErrorKind::kUnavailable;
      return MakeError(kind, std::string("HTTP request failed: ") + curl_easy_strerror(code),
                       request.method + " " + request.url);
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    return response;
  }

 private:
  TlsConfig tls_;
};

}  // namespace

std::unique_ptr<HttpClient> MakeCurlHttpClient(TlsConfig tls) {
  return std::make_unique<CurlHttpClient>(std::move(tls));
}

}  // namespace berth::net
