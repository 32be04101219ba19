#include "server/dispatch/s3_state_locks.h"

#include <regex>

#include "core/bounded_json.h"
#include "core/http_url.h"
#include "server/dispatch/backend_config.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr std::chrono::seconds kTokenLifetime = std::chrono::minutes(5);
constexpr const char* kSessionSeconds = "900";  // STS's shortest

// The text of an XML answer's first <name> element (STS's answers are flat and unescaped
// where berthd reads them: keys and tokens are base64 and alphanumerics).
std::string XmlText(const std::string& xml, const std::string& name) {
  const std::regex element("<" + name + ">([^<]*)</" + name + ">");
  std::smatch match;
  return std::regex_search(xml, match, element) ? match[1].str() : std::string();
}

// Where a request to an AWS endpoint goes: the URL, and the Host header it is signed with.
struct Target {
  std::string url, host, path;
};

Result<Target> At(const std::string& endpoint, const std::string& bucket, const std::string& key,
                  bool path_style) {
  auto url = HttpUrl::Parse(endpoint);
  if (!url) return url.error();
  const bool default_port = url->port == (url->scheme == "https" ? 443 : 80);
  std::string host = url->host + (default_port ? "" : ":" + std::to_string(url->port));
  std::string path = "/";
  if (!bucket.empty()) {
    if (path_style) {
      path += bucket + "/";
    } else {
      host = bucket + "." + host;
    }
  }
  path += key;
  return Target{url->scheme + "://" + host + path, host, path};
}

}  // namespace

Result<crypto::AwsCredentials> S3StateLocks::Credentials(const S3StateStorage& storage,
                                                         const EnvironmentRef& env) {
  const std::string& role = storage.role_arn;
  if (role.empty())
    return MakeError(ErrorKind::kFailedPrecondition,
                     "berthd has no credentials for bucket " + storage.bucket +
                         ": give the storage a role_arn whose trust policy admits berthd's ID "
                         "token for the environment (docs/state.md)");
  const std::string sub =
      "org:" + env.org + ":project:" + env.project + ":env:" + env.env + ":phase:unlock";
  auto token = sign_({{"sub", sub},
                      {"aud", "sts.amazonaws.com"},
                      {"org", env.org},
                      {"project", env.project},
                      {"environment", env.env},
                      {"phase", "unlock"}},
                     kTokenLifetime);
  if (!token) return token.error();
  auto sts = At(storage.sts_endpoint.empty() ? "https://sts." + storage.region + ".amazonaws.com"
                                             : storage.sts_endpoint,
                "", "", false);
  if (!sts) return sts.error();
  const std::string body =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + PercentEncoded(role) +
      "&RoleSessionName=berthd-unlock&DurationSeconds=" + kSessionSeconds +
      "&WebIdentityToken=" + PercentEncoded(*token);
  auto answer = http_.Send({.method = "POST",
                            .url = sts->url,
                            .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
                            .body = body});
  if (!answer) return answer.error();
  crypto::AwsCredentials credentials{XmlText(answer->body, "AccessKeyId"),
                                     XmlText(answer->body, "SecretAccessKey"),
                                     XmlText(answer->body, "SessionToken")};
  if (answer->status != 200 || credentials.access_key_id.empty())
    return MakeError(ErrorKind::kUnauthenticated, "STS refused berthd's ID token for role " + role +
                                                      ": " + std::to_string(answer->status) + " " +
                                                      XmlText(answer->body, "Message"));
  return credentials;
}

Result<std::optional<std::string>> S3StateLocks::BreakIfHeldBy(const StateStorage& storage,
                                                               const EnvironmentRef& env,
                                                               const std::string& run_id) {
  const auto* s3 = std::get_if<S3StateStorage>(&storage);
  if (s3 == nullptr) return std::optional<std::string>();
  auto credentials = Credentials(*s3, env);
  if (!credentials) return credentials.error();
  const std::string& bucket = s3->bucket;
  const std::string key = S3StateKey(*s3, env) + ".tflock";
  auto object =
      At(s3->endpoint.empty() ? "https://s3." + s3->region + ".amazonaws.com" : s3->endpoint,
         bucket, key, s3->use_path_style);
  if (!object) return object.error();
  auto send = [&](const std::string& method,
                  const std::vector<std::pair<std::string, std::string>>& headers)
      -> Result<net::HttpResponse> {
    net::HttpRequest request{.method = method, .url = object->url, .headers = headers};
    for (auto& header : crypto::SignAwsRequest(
             {.method = method, .host = object->host, .path = object->path, .headers = headers},
             *credentials, s3->region, "s3", clock_.Wall()))
      request.headers.push_back(std::move(header));
    return http_.Send(request);
  };
  auto lock = send("GET", {});
  if (!lock) return lock.error();
  if (lock->status == 404) return std::optional<std::string>();
  if (lock->status != 200)
    return MakeError(ErrorKind::kUnavailable, "s3://" + bucket + "/" + key + " cannot be read: " +
                                                  std::to_string(lock->status));
  const json info = ParseBoundedJsonOrNull(lock->body);
  // user@host: the host is the run's when the run took it.
  if (!info.is_object() || !info.value("Who", "").ends_with("@" + run_id))
    return std::optional<std::string>();
  // Only the lock as read: one tofu took again meanwhile has another ETag.
  const std::string etag = lock->headers["etag"];
  auto deleted =
      send("DELETE", etag.empty()
                         ? std::vector<std::pair<std::string, std::string>>{}
                         : std::vector<std::pair<std::string, std::string>>{{"If-Match", etag}});
  if (!deleted) return deleted.error();
  if (deleted->status != 204 && deleted->status != 200)
    return MakeError(
        ErrorKind::kUnavailable,
        "s3://" + bucket + "/" + key + " cannot be deleted: " + std::to_string(deleted->status));
  return std::optional<std::string>("the lock object s3://" + bucket + "/" + key + " (lock " +
                                    info.value("ID", "") + ")");
}

}  // namespace berth::server
