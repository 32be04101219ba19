#include "cli/connection.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/body.h"
#include "cli/cli.h"
#include "server/daemon.h"
#include "sys/files.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path DefaultDataDir() {
  if (std::string d = Env("BERTH_DATA_DIR"); !d.empty()) return d;
  std::string home = Env("HOME");
  return fs::path(home.empty() ? "/tmp" : home) / ".local/share/berth";
}

Result<Connection> Connect(const Globals& g) {
  Connection c{Env("BERTH_API_URL"), g.org.empty() ? Env("BERTH_ORG") : g.org, Env("BERTH_TOKEN")};
  fs::path config = fs::path(Env("HOME")) / ".config/berth/config.yaml";
  if (auto text = sys::ReadFile(config);
      text && (c.url.empty() || c.token.empty() || c.org.empty())) {
    auto doc = YamlToJson(*text);
    if (!doc || !doc->is_object()) {
      return MakeError(ErrorKind::kInvalidArgument, "cannot read " + config.string());
    }
    if (c.url.empty()) c.url = doc->value("api_url", "");
    if (c.org.empty()) c.org = doc->value("org", "");
    if (c.token.empty()) c.token = doc->value("token", "");
  }
  if (c.url.empty() || c.token.empty() || !g.data_dir.empty()) {
    fs::path dir = g.data_dir.empty() ? DefaultDataDir() : fs::path(g.data_dir);
    auto url = sys::ReadFile(server::UrlFilePath(dir));
    auto token = sys::ReadFile(server::AdminTokenPath(dir));
    if (url && (c.url.empty() || !g.data_dir.empty())) c.url = Trim(*url);
    if (token && (c.token.empty() || !g.data_dir.empty())) c.token = Trim(*token);
  }
  if (c.org.empty()) c.org = "default";
  if (c.url.empty()) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "no berthd to talk to: set BERTH_API_URL and BERTH_TOKEN, or run `berth up` "
                     "(and pass its --data-dir)");
  }
  return c;
}

int ExitFor(int status) {
  if (status < 300) return kExitOk;
  if (status == 404) return kExitNotFound;
  if (status == 409 || status == 412) return kExitConflict;
  if (status >= 500) return kExitUnavailable;
  return kExitRefused;
}

void PrintError(const std::string& body, int status) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("error")) {
    std::fprintf(stderr, "error: HTTP %d: %s\n", status, body.c_str());
    return;
  }
  const json& e = doc["error"];
  std::fprintf(stderr, "error: %s: %s\n", e.value("kind", "Error").c_str(),
               e.value("message", "").c_str());
  if (e.contains("fields")) {
    for (const auto& f : e["fields"]) {
      std::fprintf(stderr, "  %s: %s\n", f.value("path", "").c_str(), f.value("rule", "").c_str());
    }
  }
  if (e.contains("environments")) {
    for (const auto& env : e["environments"])
      std::fprintf(stderr, "  in use by %s\n", env.get<std::string>().c_str());
  }
}

std::optional<Connection> Reach(const Globals& g) {
  auto c = Connect(g);
  if (!c) {
    std::fprintf(stderr, "error: %s\n", c.error().message.c_str());
    return std::nullopt;
  }
  return std::move(*c);
}

Result<net::HttpResponse> SendToOrg(const Connection& c, net::HttpRequest request,
                                    const std::string& path) {
  request.url = c.url + "/orgs/" + c.org + path;
  request.headers.emplace_back("Authorization", "Bearer " + c.token);
  return net::MakeCurlHttpClient()->Send(request);
}

}  // namespace berth::cli
