#include "git_http_server.h"

#include <atomic>

#include "core/base64.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {
namespace {

std::string Header(const net::ServerRequest& request, const std::string& name) {
  auto found = request.headers.find(name);
  return found == request.headers.end() ? "" : found->second;
}

// A CGI response: headers, a blank line, the body (RFC 3875 6.2).
net::ServerResponse FromCgi(const std::string& output) {
  net::ServerResponse response;
  size_t end = output.find("\r\n\r\n");
  size_t skip = 4;
  if (end == std::string::npos) {
    end = output.find("\n\n");
    skip = 2;
  }
  if (end == std::string::npos) return {.status = 502, .body = "no CGI headers"};
  size_t at = 0;
  while (at < end) {
    size_t line_end = output.find('\n', at);
    if (line_end == std::string::npos || line_end > end) line_end = end;
    std::string line = output.substr(at, line_end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    at = line_end + 1;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "Status") {
      response.status = std::stoi(value);
    } else {
      response.headers[name] = value;
    }
  }
  response.body = output.substr(end + skip);
  return response;
}

}  // namespace

Result<std::unique_ptr<GitHttpServer>> GitHttpServer::Start(GitHttpServerOptions options) {
  std::unique_ptr<GitHttpServer> git(new GitHttpServer());
  git->options_ = std::move(options);
  auto server = net::StartHttpServer(
      {.max_body_bytes = size_t{64} << 20},
      [raw = git.get()](const net::ServerRequest& request) { return raw->Handle(request); });
  if (!server) return server.error();
  git->server_ = std::move(*server);
  return git;
}

std::string GitHttpServer::Url(const std::string& repository) const {
  return "http://127.0.0.1:" + std::to_string(server_->Port()) + "/" + repository;
}

net::ServerResponse GitHttpServer::Handle(const net::ServerRequest& request) {
  ++requests_;
  if (!options_.username.empty()) {
    const std::string expected =
        "Basic " + Base64Encode(options_.username + ":" + options_.password);
    if (Header(request, "authorization") != expected)
      return {.status = 401, .headers = {{"WWW-Authenticate", "Basic realm=\"git\""}}};
  }
  auto scratch = sys::TempDir::Create("git-cgi");
  if (!scratch) return {.status = 500, .body = scratch.error().message};
  const auto body = scratch->Path() / "body";
  const auto out = scratch->Path() / "out";
  if (!sys::WriteFileAtomic(body, request.body)) return {.status = 500};
  const std::string& target = request.target;
  const size_t question = target.find('?');
  sys::SpawnOptions cgi;
  cgi.argv = {"/bin/sh", "-c", "exec git http-backend < \"$BODY_FILE\""};
  cgi.env = std::vector<std::string>{
      "PATH=/usr/bin:/bin",
      "BODY_FILE=" + body.string(),
      "GIT_PROJECT_ROOT=" + options_.root.string(),
      "GIT_HTTP_EXPORT_ALL=1",
      "GIT_CONFIG_NOSYSTEM=1",
      "HOME=" + scratch->Path().string(),
      "REQUEST_METHOD=" + request.method,
      "PATH_INFO=" + target.substr(0, question),
      "QUERY_STRING=" + (question == std::string::npos ? "" : target.substr(question + 1)),
      "CONTENT_TYPE=" + Header(request, "content-type"),
      "CONTENT_LENGTH=" + std::to_string(request.body.size()),
      "HTTP_CONTENT_ENCODING=" + Header(request, "content-encoding"),
      "GIT_PROTOCOL=" + Header(request, "git-protocol"),
      "REMOTE_ADDR=127.0.0.1",
      "REMOTE_USER=" + options_.username};
  cgi.stdout_path = out.string();
  cgi.output_path = (scratch->Path() / "err").string();
  auto ran = sys::RunToCompletion(cgi);
  if (!ran) return {.status = 500, .body = ran.error().message};
  auto output = sys::ReadFile(out);
  if (!output) return {.status = 500};
  return FromCgi(*output);
}

Result<std::string> Git(const std::filesystem::path& folder, std::vector<std::string> args) {
  sys::SpawnOptions options;
  options.argv = {"/usr/bin/git"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.working_dir = folder.string();
  options.env = std::vector<std::string>{"PATH=/usr/bin:/bin",
                                         "HOME=" + folder.string(),
                                         "GIT_CONFIG_NOSYSTEM=1",
                                         "GIT_AUTHOR_NAME=berth test",
                                         "GIT_AUTHOR_EMAIL=t@berth",
                                         "GIT_COMMITTER_NAME=berth test",
                                         "GIT_COMMITTER_EMAIL=t@berth",
                                         "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
                                         "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"};
  auto done = sys::RunToCompletion(options);
  if (!done) return done.error();
  if (done->exit_code != 0)
    return MakeError(ErrorKind::kInternal, "git " + args.front() + ": " + done->output);
  return done->output;
}

}  // namespace berth::testenv
