#include "server/dispatch/s3_states.h"

#include <regex>

#include "core/bounded_json.h"
#include "core/decimal.h"
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

// tofu's use_lockfile lock object: beside the state, ".tflock" appended.
std::string LockKey(const S3StateStorage& storage, const EnvironmentRef& env) {
  return S3StateKey(storage, env) + ".tflock";
}

}  // namespace

Result<crypto::AwsCredentials> S3States::Credentials(const S3StateStorage& storage,
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

class S3States::Session {
 public:
  Session(net::HttpClient& http, Clock& clock, const S3StateStorage& storage,
          crypto::AwsCredentials credentials)
      : http_(http), clock_(clock), storage_(storage), credentials_(std::move(credentials)) {}

  // s3://bucket/key, as people name it.
  std::string Where(const std::string& key) const { return "s3://" + storage_.bucket + "/" + key; }

  Result<net::HttpResponse> Send(const std::string& method, const std::string& key,
                                 const Headers& headers = {}) {
    auto object = At(storage_.endpoint.empty() ? "https://s3." + storage_.region + ".amazonaws.com"
                                               : storage_.endpoint,
                     storage_.bucket, key, storage_.use_path_style);
    if (!object) return object.error();
    net::HttpRequest request{.method = method, .url = object->url, .headers = headers};
    for (auto& header : crypto::SignAwsRequest(
             {.method = method, .host = object->host, .path = object->path, .headers = headers},
             credentials_, storage_.region, "s3", clock_.Wall()))
      request.headers.push_back(std::move(header));
    return http_.Send(request);
  }

 private:
  net::HttpClient& http_;
  Clock& clock_;
  const S3StateStorage& storage_;
  const crypto::AwsCredentials credentials_;
};

Result<S3States::Session> S3States::Open(const S3StateStorage& storage, const EnvironmentRef& env) {
  auto credentials = Credentials(storage, env);
  if (!credentials) return credentials.error();
  return Session(http_, clock_, storage, std::move(*credentials));
}

Result<std::optional<S3States::ReadLock>> S3States::LockOf(Session& session,
                                                           const std::string& key) {
  auto lock = session.Send("GET", key);
  if (!lock) return lock.error();
  if (lock->status == 404) return std::optional<ReadLock>();
  if (lock->status != 200)
    return MakeError(ErrorKind::kUnavailable,
                     session.Where(key) + " cannot be read: " + std::to_string(lock->status));
  return std::optional<ReadLock>(
      ReadLock{.info = ParseBoundedJsonOrNull(lock->body), .etag = lock->headers["etag"]});
}

Result<void> S3States::DeleteAsRead(Session& session, const std::string& key,
                                    const ReadLock& lock) {
  // Only the lock as read: one tofu took again meanwhile has another ETag.
  auto deleted =
      session.Send("DELETE", key, lock.etag.empty() ? Headers{} : Headers{{"If-Match", lock.etag}});
  if (!deleted) return deleted.error();
  if (deleted->status == 412)
    return MakeError(ErrorKind::kConflict,
                     session.Where(key) + " changed since it was read: a run took the lock again");
  if (deleted->status != 204 && deleted->status != 200)
    return MakeError(ErrorKind::kUnavailable,
                     session.Where(key) + " cannot be deleted: " + std::to_string(deleted->status));
  return {};
}

Result<std::optional<std::string>> S3States::BreakIfHeldBy(const StateStorage& storage,
                                                           const EnvironmentRef& env,
                                                           const std::string& run_id) {
  const auto* s3 = std::get_if<S3StateStorage>(&storage);
  if (s3 == nullptr) return std::optional<std::string>();
  auto opened = Open(*s3, env);
  if (!opened) return opened.error();
  Session& session = *opened;
  const std::string key = LockKey(*s3, env);
  auto lock = LockOf(session, key);
  if (!lock) return lock.error();
  // user@host: the host is the run's when the run took it.
  if (!*lock || !(*lock)->info.is_object() ||
      !(*lock)->info.value("Who", "").ends_with("@" + run_id))
    return std::optional<std::string>();
  if (auto deleted = DeleteAsRead(session, key, **lock); !deleted) return deleted.error();
  return std::optional<std::string>("the lock object " + session.Where(key) + " (lock " +
                                    (*lock)->info.value("ID", "") + ")");
}

namespace {

// TF's LockInfo as an operator reads it; a lock that is no JSON object names only its place.
ElsewhereLock LockFrom(const nlohmann::json& info, std::string where) {
  ElsewhereLock lock{.where = std::move(where)};
  if (!info.is_object()) return lock;
  auto text = [&info](const char* field) {
    auto it = info.find(field);
    return it != info.end() && it->is_string() ? it->get<std::string>().substr(0, 1024)
                                               : std::string();
  };
  lock.id = text("ID");
  lock.who = text("Who");
  lock.operation = text("Operation");
  lock.created = text("Created");
  return lock;
}

// The whole size of an object from a ranged answer's "Content-Range: bytes 0-0/SIZE".
std::optional<int64_t> TotalSize(const std::string& content_range) {
  const size_t slash = content_range.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return ParseDecimal<int64_t>(content_range.substr(slash + 1));
}

}  // namespace

Result<ElsewhereState> S3States::Show(const StateStorage& storage, const EnvironmentRef& env) {
  const auto* s3 = std::get_if<S3StateStorage>(&storage);
  if (s3 == nullptr)
    return MakeError(
        ErrorKind::kFailedPrecondition,
        "berthd does not read " + std::string(StateStorageTypeName(TypeOf(storage))) + " storage");
  auto opened = Open(*s3, env);
  if (!opened) return opened.error();
  Session& session = *opened;
  const std::string key = S3StateKey(*s3, env);
  ElsewhereState state{.where = session.Where(key)};
  // One byte of it: its size, ETag and date without reading a state of many megabytes.
  auto head = session.Send("GET", key, {{"Range", "bytes=0-0"}});
  if (!head) return head.error();
  if (head->status == 206) {
    state.size = TotalSize(head->headers["content-range"]);
  } else if (head->status == 416) {
    state.size = 0;  // an empty object has no first byte
  } else if (head->status != 404) {
    return MakeError(ErrorKind::kUnavailable,
                     state.where + " cannot be read: " + std::to_string(head->status));
  }
  state.etag = head->headers["etag"];
  state.last_modified = head->headers["last-modified"];
  auto lock = LockOf(session, LockKey(*s3, env));
  if (!lock) return lock.error();
  if (*lock) state.lock = LockFrom((*lock)->info, session.Where(LockKey(*s3, env)));
  return state;
}

Result<ElsewhereLock> S3States::Unlock(const StateStorage& storage, const EnvironmentRef& env) {
  const auto* s3 = std::get_if<S3StateStorage>(&storage);
  if (s3 == nullptr)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "berthd does not unlock " +
                         std::string(StateStorageTypeName(TypeOf(storage))) + " storage");
  auto opened = Open(*s3, env);
  if (!opened) return opened.error();
  Session& session = *opened;
  const std::string key = LockKey(*s3, env);
  auto lock = LockOf(session, key);
  if (!lock) return lock.error();
  if (!*lock)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "the state in " + session.Where(S3StateKey(*s3, env)) + " is not locked");
  if (auto deleted = DeleteAsRead(session, key, **lock); !deleted) return deleted.error();
  return LockFrom((*lock)->info, session.Where(key));
}

}  // namespace berth::server
