// How the CLI reaches berthd: flags, then BERTH_API_URL, BERTH_ORG and BERTH_TOKEN, then
// ~/.config/berth/config.yaml, then the data folder of a local `berth up` (its berthd.url and
// admin-token files); and how the server's answers become output and exit codes.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/error.h"
#include "net/http_client.h"

namespace berth::cli {

struct Globals {
  std::string org;
  std::string data_dir;
  std::string output = "table";
};

struct Connection {
  std::string url, org, token;
};

std::string Env(const char* name);
std::filesystem::path DefaultDataDir();
Result<Connection> Connect(const Globals& g);
// The connection, or nothing after saying why on stderr.
std::optional<Connection> Reach(const Globals& g);
// Prints the server's error as it is (kind, message, then each field and its rule) and
// returns the exit code the error table gives its kind (a body without one: its status's).
int ReportError(const std::string& body, int status);
// Sends a request to /orgs/{org}{path} as the connection's token; errors are printed and
// returned as the exit code.
Result<net::HttpResponse> SendToOrg(const Connection& c, net::HttpRequest request,
                                    const std::string& path);

// A call's JSON answer, or the exit code (the error printed).
struct Answer {
  int exit_code = 0;
  nlohmann::json body;
  std::map<std::string, std::string> headers;
};
// SendToOrg with a body of content_type (none when empty), its answer read as JSON.
Answer Send(const Connection& c, const std::string& method, const std::string& path,
            std::string body = {}, const std::string& content_type = "application/json");

}  // namespace berth::cli
