#include "runner/gateway_client.h"

#include <nlohmann/json.hpp>
#include <thread>

namespace berth::runner {
namespace {

bool Retryable(int status) { return status >= 500 || status == 408 || status == 429; }

// The message of berthd's error document, or the start of the body.
std::string Reason(const net::HttpResponse& response) {
  auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object())
    return doc["error"].value("message", "");
  return response.body.substr(0, 200);
}

}  // namespace

GatewayClient::GatewayClient(GatewayOptions options, std::unique_ptr<net::HttpClient> http)
    : options_(std::move(options)), http_(std::move(http)) {}

Result<std::string> GatewayClient::Send(const std::string& method, const std::string& path,
                                        std::string body, const std::string& content_type) {
  net::HttpRequest request;
  request.method = method;
  request.url = options_.url + "/runs/v1/" + options_.run_id + path;
  request.headers = {{"Authorization", "Bearer " + options_.token}};
  if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
  request.body = std::move(body);
  request.timeout = std::chrono::seconds(60);
  auto give_up_at = std::chrono::steady_clock::now() + options_.retry_for;
  auto pause = options_.first_pause;
  for (;;) {
    auto response = http_->Send(request);
    std::string why;
    if (response && response->status >= 200 && response->status < 300)
      return std::move(response->body);
    if (response && !Retryable(response->status)) {
      ErrorKind kind = response->status == 401 || response->status == 403
                           ? ErrorKind::kPermissionDenied
                       : response->status == 404 ? ErrorKind::kNotFound
                                                 : ErrorKind::kFailedPrecondition;
      return MakeError(kind, method + " " + path + ": the gateway answered " +
                                 std::to_string(response->status) + ": " + Reason(*response));
    }
    why = response ? "status " + std::to_string(response->status) : response.error().message;
    if (gave_up_ || std::chrono::steady_clock::now() + pause > give_up_at)
      return MakeError(ErrorKind::kUnavailable,
                       method + " " + path + ": the gateway stayed unreachable (" + why + ")");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, options_.max_pause);
  }
}

Result<std::string> GatewayClient::Fetch(const std::string& what) {
  return Send("GET", "/" + what, {}, "");
}

Result<void> GatewayClient::AppendLog(int64_t seq, const std::string& chunk) {
  auto sent = Send("POST", "/logs?seq=" + std::to_string(seq), chunk, "text/plain");
  if (!sent) return sent.error();
  return {};
}

Result<void> GatewayClient::PutArtifact(const std::string& name, const std::string& content) {
  auto sent = Send("PUT", "/artifacts/" + name, content, "application/octet-stream");
  if (!sent) return sent.error();
  return {};
}

Result<void> GatewayClient::PostResult(const std::string& result_json) {
  auto sent = Send("POST", "/result", result_json, "application/json");
  if (!sent) return sent.error();
  return {};
}

}  // namespace berth::runner
