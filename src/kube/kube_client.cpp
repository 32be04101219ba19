// KubeClient on libcurl. Each verb is one request (reads retried on 429 and 5xx); a watch is
// one long response read line by line. Rate limiting waits, it never refuses.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/clock.h"
#include "core/decimal.h"
#include "core/mutex.h"
#include "core/token_bucket.h"
#include "kube/kube_api.h"
#include "kube/watch_stream.h"

namespace berth::kube {
namespace {

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(static_cast<int>(c)) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

class Query {
 public:
  Query& Add(std::string_view key, std::string_view value) {
    if (value.empty()) return *this;
    text_ += text_.empty() ? '?' : '&';
    text_ += key;
    text_ += '=';
    text_ += UrlEncode(value);
    return *this;
  }
  const std::string& Text() const { return text_; }

 private:
  std::string text_;
};

ErrorKind KindOfStatus(int status) {
  switch (status) {
    case 400:
    case 422:
      return ErrorKind::kInvalidArgument;
    case 401:
      return ErrorKind::kUnauthenticated;
    case 403:
      return ErrorKind::kPermissionDenied;
    case 404:
      return ErrorKind::kNotFound;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kFailedPrecondition;
    case 429:
      return ErrorKind::kResourceExhausted;
    case 504:
      return ErrorKind::kDeadlineExceeded;
    default:
      return status >= 500 ? ErrorKind::kUnavailable : ErrorKind::kInternal;
  }
}

bool Retriable(const Result<net::HttpResponse>& response) {
  if (!response) return response.error().kind == ErrorKind::kUnavailable;
  return response->status == 429 || response->status == 502 || response->status == 503;
}

class CurlKubeClient final : public KubeClient {
 public:
  CurlKubeClient(KubeConfig config, KubeClientOptions options)
      : config_(std::move(config)),
        options_(std::move(options)),
        http_(net::MakeCurlHttpClient(config_.Tls())),
        bucket_(options_.qps, options_.burst, SystemClock::Instance().Now()) {}

  Result<json> Create(const ResourceKind& kind, std::string_view ns, const json& object) override {
    return SendJson("create", kind, "POST", kind.CollectionPath(ns), object.dump(),
                    "application/json", false);
  }

  Result<json> CreateSubresource(const ResourceKind& kind, std::string_view ns,
                                 std::string_view name, std::string_view subresource,
                                 const json& object) override {
    return SendJson("create", kind, "POST",
                    kind.ObjectPath(ns, name) + "/" + std::string(subresource), object.dump(),
                    "application/json", false);
  }

  Result<json> Get(const ResourceKind& kind, std::string_view ns, std::string_view name) override {
    return SendJson("get", kind, "GET", kind.ObjectPath(ns, name), {}, {}, true);
  }

  Result<ObjectList> List(const ResourceKind& kind, std::string_view ns,
                          const ListOptions& options) override {
    ObjectList list;
    std::string continue_token;
    do {
      Query query;
      query.Add("labelSelector", options.label_selector)
          .Add("fieldSelector", options.field_selector)
          .Add("limit", std::to_string(options.page_size))
          .Add("continue", continue_token);
      auto page =
          SendJson("list", kind, "GET", kind.CollectionPath(ns) + query.Text(), {}, {}, true);
      if (!page) return page.error();
      for (auto& item : (*page)["items"]) {
        if (options.each_item) options.each_item(item);
        list.items.push_back(std::move(item));
      }
      const json& metadata = (*page)["metadata"];
      list.resource_version = metadata.value("resourceVersion", "");
      continue_token = metadata.value("continue", "");
    } while (!continue_token.empty());
    return list;
  }

  Result<json> Patch(const ResourceKind& kind, std::string_view ns, std::string_view name,
                     PatchType type, const json& patch, std::string_view field_manager,
                     std::string_view subresource) override {
    std::string path = kind.ObjectPath(ns, name);
    if (!subresource.empty()) path += "/" + std::string(subresource);
    Query query;
    query.Add("fieldManager", field_manager);
    if (type == PatchType::kApply) query.Add("force", "true");
    const char* content_type =
        type == PatchType::kApply ? "application/apply-patch+yaml" : "application/merge-patch+json";
    return SendJson("patch", kind, "PATCH", path + query.Text(), patch.dump(), content_type, false);
  }

  Result<void> Delete(const ResourceKind& kind, std::string_view ns, std::string_view name,
                      const DeleteOptions& options) override {
    json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
    if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
    if (!options.precondition_uid.empty())
      body["preconditions"] = {{"uid", options.precondition_uid}};
    if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
    auto result = SendJson("delete", kind, "DELETE", kind.ObjectPath(ns, name), body.dump(),
                           "application/json", false);
    if (!result) return result.error();
    return {};
  }

  Result<void> Watch(const ResourceKind& kind, std::string_view ns, const WatchOptions& options,
                     const std::function<bool(WatchEvent)>& on_event,
                     const std::function<bool()>& cancelled) override {
    Query query;
    query.Add("watch", "true")
        .Add("allowWatchBookmarks", "true")
        .Add("labelSelector", options.label_selector)
        .Add("fieldSelector", options.field_selector)
        .Add("resourceVersion", options.resource_version)
        .Add("timeoutSeconds", std::to_string(options.timeout_seconds));
    auto request = Request("watch", kind, "GET", kind.CollectionPath(ns) + query.Text(), {}, {});
    if (!request) return request.error();
    request->timeout = std::chrono::seconds(options.timeout_seconds + 30);
    request->cancelled = cancelled;
    WatchStreamDecoder decoder(Describe(kind));
    request->on_body = [&](std::string_view piece) { return decoder.Feed(piece, on_event); };
    auto response = http_->Send(*request);
    if (decoder.StreamError()) return *decoder.StreamError();
    if (!response) return response.error();
    if (response->status / 100 != 2)
      return DecodeStatusError(response->status, decoder.Pending(), Describe(kind));
    return {};
  }

  RequestCounts Counts() const override {
    MutexLock lock(mutex_);
    return counts_;
  }

  std::string MetricsText() const override {
    std::string text =
        "# HELP berth_kube_requests_total Kubernetes API requests sent, by verb and resource.\n"
        "# TYPE berth_kube_requests_total counter\n";
    for (const auto& [key, count] : Counts()) {
      auto space = key.find(' ');
      text += fmt::format("berth_kube_requests_total{{verb=\"{}\",resource=\"{}\"}} {}\n",
                          key.substr(0, space), key.substr(space + 1), count);
    }
    text += fmt::format(
        "# HELP berth_kube_client_qps The client-side rate limit: requests per second, burst.\n"
        "# TYPE berth_kube_client_qps gauge\nberth_kube_client_qps {}\n"
        "# TYPE berth_kube_client_burst gauge\nberth_kube_client_burst {}\n",
        options_.qps, options_.burst);
    return text;
  }

 private:
  static std::string Describe(const ResourceKind& kind) { return std::string(kind.plural); }

  // Waits for the rate limit, counts the request and builds it with the current token.
  Result<net::HttpRequest> Request(std::string_view verb, const ResourceKind& kind,
                                   std::string method, const std::string& path_and_query,
                                   std::string body, std::string_view content_type) {
    std::chrono::nanoseconds wait;
    {
      MutexLock lock(mutex_);
      wait = bucket_.Reserve(SystemClock::Instance().Now());
      ++counts_[fmt::format("{} {}", verb, kind.plural)];
    }
    if (wait > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(wait);
    net::HttpRequest request;
    request.method = std::move(method);
    request.url = config_.Server() + path_and_query;
    request.body = std::move(body);
    request.proxy = config_.ProxyUrl();
    request.headers = {{"Accept", "application/json"}, {"User-Agent", options_.user_agent}};
    if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
    auto token = config_.Token();
    if (!token) return token.error();
    if (!token->empty()) request.headers.emplace_back("Authorization", "Bearer " + *token);
    return request;
  }

  Result<json> SendJson(std::string_view verb, const ResourceKind& kind, const std::string& method,
                        const std::string& path_and_query, const std::string& body,
                        std::string_view content_type, bool idempotent) {
    constexpr int kAttempts = 4;
    Result<net::HttpResponse> response = MakeError(ErrorKind::kInternal, "not sent");
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      auto request = Request(verb, kind, method, path_and_query, body, content_type);
      if (!request) return request.error();
      response = http_->Send(*request);
      // A 429 was not processed, so even a write may go again; other failures only for reads.
      bool again = Retriable(response) && (idempotent || (response && response->status == 429));
      if (!again || attempt + 1 == kAttempts) break;
      std::this_thread::sleep_for(RetryDelay(response, attempt));
    }
    if (!response) return response.error();
    std::string context = method + " " + path_and_query;
    if (response->status / 100 != 2)
      return DecodeStatusError(response->status, response->body, std::move(context));
    json object = json::parse(response->body, nullptr, false);
    if (object.is_discarded())
      return MakeError(ErrorKind::kUnavailable, "the API answered with a body that is not JSON",
                       std::move(context));
    return Ok(std::move(object));
  }

  static std::chrono::milliseconds RetryDelay(const Result<net::HttpResponse>& response,
                                              int attempt) {
    if (response) {
      auto after = response->headers.find("retry-after");
      if (after != response->headers.end()) {
        int seconds = ParseDecimal<int>(after->second).value_or(0);
        if (seconds > 0) return std::chrono::seconds(std::min(seconds, 10));
      }
    }
    return std::chrono::milliseconds(100 << attempt);
  }

  KubeConfig config_;
  KubeClientOptions options_;
  std::unique_ptr<net::HttpClient> http_;
  mutable Mutex mutex_;
  TokenBucket bucket_ GUARDED_BY(mutex_);
  RequestCounts counts_ GUARDED_BY(mutex_);
};

}  // namespace

Error DecodeStatusError(int http_status, std::string_view body, std::string context) {
  // The body comes from outside: every field is read only when it has the expected type.
  auto text = [](const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  json status = json::parse(body, nullptr, false);
  if (!status.is_object() || text(status, "kind") != "Status") status = json::object();
  std::string reason = text(status, "reason");
  std::string message = text(status, "message");
  if (message.empty()) message = fmt::format("the Kubernetes API answered {}", http_status);
  Error error = MakeError(KindOfStatus(http_status), message, std::move(context));
  error.reason = reason;
  if (reason == "AlreadyExists") error.kind = ErrorKind::kAlreadyExists;
  if (http_status == 403 && message.find("exceeded quota") != std::string::npos) {
    error.kind = ErrorKind::kResourceExhausted;
    error.reason = kReasonQuotaExceeded;
  } else if (http_status == 403 && message.find("failed quota") != std::string::npos &&
             message.find("must specify") != std::string::npos) {
    error.kind = ErrorKind::kFailedPrecondition;
    error.reason = kReasonQuotaNeedsResources;
  }
  if (http_status == 410) error.reason = kReasonExpired;
  auto details = status.find("details");
  if (details != status.end() && details->is_object()) {
    auto causes = details->find("causes");
    if (causes != details->end() && causes->is_array()) {
      for (const json& cause : *causes) {
        if (cause.is_object())
          error.fields.push_back(FieldError{text(cause, "field"), text(cause, "message")});
      }
    }
  }
  return error;
}

std::unique_ptr<KubeClient> MakeKubeClient(KubeConfig config, KubeClientOptions options) {
  return std::make_unique<CurlKubeClient>(std::move(config), std::move(options));
}

}  // namespace berth::kube
