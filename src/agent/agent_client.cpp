#include "agent/agent_client.h"

#include "core/time_format.h"
#include "crypto/agent_token.h"
#include "crypto/random.h"
#include "launch/launch_request_json.h"

namespace berth::agent {
namespace {

using nlohmann::json;

// Each token lives two minutes: long enough for a held poll, short enough to be worthless soon.
constexpr int64_t kTokenLifetime = 120;

ErrorKind KindOfStatus(int status) {
  if (status == 401) return ErrorKind::kUnauthenticated;
  if (status == 403) return ErrorKind::kPermissionDenied;
  if (status == 404) return ErrorKind::kNotFound;
  if (status == 409) return ErrorKind::kConflict;
  if (status >= 400 && status < 500) return ErrorKind::kInvalidArgument;
  return ErrorKind::kUnavailable;
}

}  // namespace

AgentClient::AgentClient(AgentIdentity identity, crypto::Ed25519Signer signer,
                         std::unique_ptr<net::HttpClient> http)
    : identity_(std::move(identity)), signer_(std::move(signer)), http_(std::move(http)) {}

Result<json> AgentClient::Call(const std::string& method, const std::string& path, const json& body,
                               std::chrono::milliseconds timeout, std::function<bool()> stop) {
  int64_t now = UnixSecondsNow();
  auto token = crypto::MintAgentToken(
      {identity_.org, identity_.runner, now, now + kTokenLifetime, crypto::RandomToken(16)},
      signer_);
  if (!token) return token.error();
  net::HttpRequest request{
      .method = method,
      .url = identity_.url + "/agents/v1/orgs/" + identity_.org + "/runners/" + identity_.runner +
             path,
      .headers = {{"Authorization", "Bearer " + *token}, {"Content-Type", "application/json"}},
      .body = method == "GET" ? "" : body.dump(),
      .timeout = timeout,
      .cancelled = std::move(stop)};
  auto response = http_->Send(request);
  if (!response) return response.error();
  if (response->status == 204) return Ok(json::object());
  json doc = json::parse(response->body, nullptr, false);
  if (response->status / 100 != 2) {
    std::string message = doc.is_object() && doc.contains("error")
                              ? doc["error"].value("message", response->body)
                              : response->body;
    return MakeError(KindOfStatus(response->status),
                     "berthd answered " + std::to_string(response->status) + ": " + message);
  }
  if (!doc.is_object())
    return MakeError(ErrorKind::kUnavailable, "berthd's answer to " + path + " is not JSON");
  return Ok(std::move(doc));
}

Result<std::optional<json>> AgentClient::Next(const std::string& name, const std::string& version,
                                              int wait_seconds, std::function<bool()> stop) {
  auto doc = Call("POST", "/commands/next",
                  {{"agent", name}, {"version", version}, {"wait_seconds", wait_seconds}},
                  std::chrono::seconds(wait_seconds + 30), std::move(stop));
  if (!doc) return doc.error();
  const json& command = (*doc)["command"];
  if (command.is_null()) return std::optional<json>();
  if (!command.is_object())
    return MakeError(ErrorKind::kUnavailable, "berthd's command is not a JSON object");
  return std::optional<json>(command);
}

Result<void> AgentClient::Settle(int64_t seq, const std::string& action, const std::string& receipt,
                                 const std::string& reason) {
  json body = {{"receipt", receipt}};
  if (!reason.empty()) body["reason"] = reason.substr(0, 4096);
  auto doc = Call("POST", "/commands/" + std::to_string(seq) + "/" + action, body,
                  std::chrono::seconds(30));
  if (!doc) return doc.error();
  return {};
}

Result<void> AgentClient::Event(const std::string& run_id, const launch::LaunchEvent& event) {
  auto doc = Call("POST", "/runs/" + run_id + "/events",
                  {{"reason", event.reason},
                   {"message", event.message.substr(0, 4096)},
                   {"warning", event.warning}},
                  std::chrono::seconds(30));
  if (!doc) return doc.error();
  return {};
}

Result<void> AgentClient::End(const std::string& run_id, const json& report) {
  auto doc =
      Call("POST", "/runs/" + run_id + "/end", {{"report", report}}, std::chrono::seconds(30));
  if (!doc) return doc.error();
  return {};
}

Result<std::vector<launch::LaunchRequest>> AgentClient::LiveRuns() {
  auto doc = Call("GET", "/runs", json(), std::chrono::seconds(30));
  if (!doc) return doc.error();
  std::vector<launch::LaunchRequest> runs;
  for (const json& run : doc->value("runs", json::array())) {
    auto request = launch::LaunchRequestFromJson(run);
    if (!request) return request.error();
    runs.push_back(std::move(*request));
  }
  return runs;
}

}  // namespace berth::agent
