// A real Git server on loopback for the controller's Git sources: git's own smart-HTTP backend
// (`git http-backend`, as a CGI program) behind berth's HTTP server, optionally with basic
// auth. Test infrastructure; the repositories are folders the test makes with `git` itself.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "net/http_server.h"

namespace berth::testenv {

struct GitHttpServerOptions {
  std::filesystem::path root;  // repositories are root/<name> (bare or not)
  std::string username;        // both set: every request needs them (basic auth)
  std::string password;
};

class GitHttpServer {
 public:
  static Result<std::unique_ptr<GitHttpServer>> Start(GitHttpServerOptions options);
  // http://127.0.0.1:PORT/<name>
  std::string Url(const std::string& repository) const;
  int Requests() const { return requests_; }

 private:
  GitHttpServer() = default;
  net::ServerResponse Handle(const net::ServerRequest& request);

  GitHttpServerOptions options_;
  std::unique_ptr<net::HttpServer> server_;
  std::atomic<int> requests_{0};
};

// Runs git with args in folder (a fixed author and date, no user config): the test's hands.
Result<std::string> Git(const std::filesystem::path& folder, std::vector<std::string> args);

}  // namespace berth::testenv
