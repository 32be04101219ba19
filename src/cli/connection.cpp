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

int ReportError(const std::string& body, int status) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) {
    std::fprintf(stderr, "error: HTTP %d: %s\n", status, body.c_str());
    return Describe(ErrorKindForStatus(status)).cli_exit;
  }
  const json& e = doc["error"];
  auto text = [](const json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string kind = text(e, "kind");
  std::fprintf(stderr, "error: %s: %s\n", kind.empty() ? "Error" : kind.c_str(),
               text(e, "message").c_str());
  if (auto fields = e.find("fields"); fields != e.end() && fields->is_array()) {
    for (const auto& f : *fields) {
      if (f.is_object())
        std::fprintf(stderr, "  %s: %s\n", text(f, "path").c_str(), text(f, "rule").c_str());
    }
  }
  if (auto envs = e.find("environments"); envs != e.end() && envs->is_array()) {
    for (const auto& env : *envs) {
      if (env.is_string()) std::fprintf(stderr, "  in use by %s\n", env.get<std::string>().c_str());
    }
  }
  return Describe(ParseErrorKind(kind).value_or(ErrorKindForStatus(status))).cli_exit;
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

Answer Send(const Connection& c, const std::string& method, const std::string& path,
            std::string body, const std::string& content_type) {
  net::HttpRequest request{.method = method};
  request.headers = {{"Accept", "application/json"}};
  if (!body.empty()) {
    request.headers.emplace_back("Content-Type", content_type);
    request.body = std::move(body);
  }
  request.timeout = std::chrono::minutes(5);
  auto response = SendToOrg(c, std::move(request), path);
  if (!response) {
    std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
    return {kExitUnavailable, {}, {}};
  }
  if (response->status >= 300) return {ReportError(response->body, response->status), {}, {}};
  return {kExitOk, nlohmann::json::parse(response->body, nullptr, false), response->headers};
}

}  // namespace berth::cli
