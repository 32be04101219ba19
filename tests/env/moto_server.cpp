#include "moto_server.h"

#include <csignal>
#include <regex>

#include "loopback.h"

namespace berth::testenv {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(60);

}  // namespace

Result<MotoServer*> MotoServer::Shared() {
  static Result<std::unique_ptr<MotoServer>> server = Start();
  if (!server) return server.error();
  return server->get();
}

Result<std::unique_ptr<MotoServer>> MotoServer::Start() {
  auto dir = sys::TempDir::Create("berth-moto");
  if (!dir) return dir.error();
  std::unique_ptr<MotoServer> server(new MotoServer(std::move(*dir)));
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  server->port_ = *port;
  sys::SpawnOptions options;
  // The python3 on PATH, which scripts/bootstrap installed moto for.
  options.argv = {"/usr/bin/env", "python3",   "-m", "moto.server",
                  "-H",           "127.0.0.1", "-p", std::to_string(*port)};
  options.output_path = (server->dir_.Path() / "moto.log").string();
  options.working_dir = server->dir_.Path().string();
  auto process = StartServing("moto (run scripts/bootstrap, which installs moto[server])", options,
                              server->Url() + "/moto-api/", kStartTimeout);
  if (!process) return process.error();
  server->server_ = std::move(*process);
  return server;
}

MotoServer::~MotoServer() {
  if (server_) {
    server_->Signal(SIGTERM);
    server_->Wait();
  }
}

std::string MotoServer::Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

Result<net::HttpResponse> MotoServer::Send(const std::string& method, const std::string& path,
                                           const std::string& body) const {
  // As a signed request, which moto takes from any key (it checks no signature): an unsigned
  // one is anonymous, and the objects tofu writes are private.
  net::HttpRequest request{.method = method,
                           .url = Url() + path,
                           .headers = {{"Authorization",
                                        "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/"
                                        "aws4_request, SignedHeaders=host, Signature=0"}},
                           .body = body};
  // Bytes, not a form: a server that reads a form body would consume them.
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/octet-stream");
  return http_->Send(request);
}

Result<void> MotoServer::CreateBucket(const std::string& bucket) const {
  auto created = Send("PUT", "/" + bucket);
  if (!created) return created.error();
  if (created->status != 200)
    return MakeError(ErrorKind::kInternal, "moto did not create bucket " + bucket + ": " +
                                               std::to_string(created->status) + " " +
                                               created->body);
  return {};
}

Result<std::vector<std::string>> MotoServer::Keys(const std::string& bucket,
                                                  const std::string& prefix) const {
  auto listed = Send("GET", "/" + bucket + "?list-type=2&prefix=" + prefix);
  if (!listed) return listed.error();
  if (listed->status != 200)
    return MakeError(ErrorKind::kInternal,
                     "moto did not list " + bucket + ": " + std::to_string(listed->status));
  // ListObjectsV2's XML: each object's <Key>; keys here are plain paths, never escaped.
  static const std::regex kKey("<Key>([^<]*)</Key>");
  std::vector<std::string> keys;
  for (std::sregex_iterator it(listed->body.begin(), listed->body.end(), kKey), end; it != end;
       ++it)
    keys.push_back((*it)[1]);
  return keys;
}

Result<void> MotoServer::PutObject(const std::string& bucket, const std::string& key,
                                   const std::string& content) const {
  auto put = Send("PUT", "/" + bucket + "/" + key, content);
  if (!put) return put.error();
  if (put->status != 200)
    return MakeError(ErrorKind::kInternal,
                     "moto did not take " + key + ": " + std::to_string(put->status));
  return {};
}

Result<std::string> MotoServer::Object(const std::string& bucket, const std::string& key) const {
  auto got = Send("GET", "/" + bucket + "/" + key);
  if (!got) return got.error();
  if (got->status == 404) return MakeError(ErrorKind::kNotFound, "no object " + key);
  if (got->status != 200)
    return MakeError(ErrorKind::kInternal,
                     "moto did not answer for " + key + ": " + std::to_string(got->status));
  return got->body;
}

}  // namespace berth::testenv
