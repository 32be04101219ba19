// The CLI's commands on CLI11. Connection settings come from flags, then BERTH_API_URL,
// BERTH_ORG and BERTH_TOKEN, then ~/.config/berth/config.yaml, then the data folder of a
// local `berth up` (its berthd.url and admin-token files).
#include "cli/cli.h"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/body.h"
#include "cli/render.h"
#include "net/http_client.h"
#include "server/daemon.h"
#include "sys/files.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Kind {
  std::string name;  // singular, as typed
  std::string plural;
  std::string collection;  // URL segment
  bool in_project = false;
  std::vector<std::pair<std::string, std::string>> columns;  // header, JSON pointer
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kKinds = {
      {"runner",
       "runners",
       "runners",
       false,
       {{"ID", "/id"},
        {"TYPE", "/runner_configuration/type"},
        {"STATE STORAGE", "/state_storage_configuration/type"},
        {"DESCRIPTION", "/description"}}},
      {"runner-rule",
       "runner-rules",
       "runner-rules",
       false,
       {{"ID", "/id"},
        {"RUNNER", "/runner_id"},
        {"PROJECT", "/project_id"},
        {"ENV TYPE", "/env_type_id"}}},
      {"project",
       "projects",
       "projects",
       false,
       {{"ID", "/id"}, {"DISPLAY NAME", "/display_name"}}},
      {"env-type",
       "env-types",
       "env-types",
       false,
       {{"ID", "/id"}, {"DISPLAY NAME", "/display_name"}}},
      {"env",
       "envs",
       "envs",
       true,
       {{"ID", "/id"},
        {"PROJECT", "/project_id"},
        {"ENV TYPE", "/env_type_id"},
        {"RUNNER", "/runner_id"}}},
  };
  return kKinds;
}

const Kind* FindKind(const std::string& word, bool& plural) {
  for (const auto& k : Kinds()) {
    if (word == k.name) {
      plural = false;
      return &k;
    }
    if (word == k.plural) {
      plural = true;
      return &k;
    }
  }
  return nullptr;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path DefaultDataDir() {
  if (std::string d = Env("BERTH_DATA_DIR"); !d.empty()) return d;
  std::string home = Env("HOME");
  return fs::path(home.empty() ? "/tmp" : home) / ".local/share/berth";
}

struct Globals {
  std::string org;
  std::string data_dir;
  std::string output = "table";
};

struct Connection {
  std::string url, org, token;
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
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

// Prints the server's error as it is: kind, message, then each field and its rule.
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

std::string Cell(const json& item, const std::string& pointer) {
  json::json_pointer p(pointer);
  if (!item.contains(p) || item[p].is_null()) return "-";
  const json& v = item[p];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void PrintTable(const Kind& kind, const std::vector<json>& items) {
  std::vector<size_t> widths;
  for (const auto& [header, _] : kind.columns) widths.push_back(header.size());
  for (const auto& item : items) {
    for (size_t i = 0; i < kind.columns.size(); ++i)
      widths[i] = std::max(widths[i], Cell(item, kind.columns[i].second).size());
  }
  auto row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      line += cells[i];
      if (i + 1 < cells.size()) line += std::string(widths[i] - cells[i].size() + 3, ' ');
    }
    std::printf("%s\n", line.c_str());
  };
  std::vector<std::string> headers;
  for (const auto& [header, _] : kind.columns) headers.push_back(header);
  row(headers);
  for (const auto& item : items) {
    std::vector<std::string> cells;
    for (const auto& [_, pointer] : kind.columns) cells.push_back(Cell(item, pointer));
    row(cells);
  }
}

void Print(const Globals& g, const Kind* kind, const json& doc, bool list) {
  if (g.output == "json") {
    std::printf("%s\n", doc.dump(2).c_str());
  } else if (g.output == "yaml") {
    std::printf("%s", JsonToYaml(doc).c_str());
  } else if (kind != nullptr) {
    std::vector<json> items;
    if (list) {
      for (const auto& i : doc["items"]) items.push_back(i);
    } else {
      items.push_back(doc);
    }
    PrintTable(*kind, items);
  } else {
    std::printf("%s", JsonToYaml(doc).c_str());
  }
}

int Call(const Globals& g, const std::string& method, const std::string& path, const json* body,
         const Kind* kind, bool list, bool quiet = false) {
  auto c = Connect(g);
  if (!c) {
    std::fprintf(stderr, "error: %s\n", c.error().message.c_str());
    return kExitUnavailable;
  }
  auto http = net::MakeCurlHttpClient();
  net::HttpRequest request{.method = method, .url = c->url + "/orgs/" + c->org + path};
  request.headers = {{"Authorization", "Bearer " + c->token}, {"Accept", "application/json"}};
  if (body) {
    request.headers.emplace_back(
        "Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json");
    request.body = body->dump();
  }
  auto response = http->Send(request);
  if (!response) {
    std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
    return kExitUnavailable;
  }
  if (response->status >= 300) {
    PrintError(response->body, response->status);
    return ExitFor(response->status);
  }
  if (!quiet && !response->body.empty()) {
    Print(g, kind, json::parse(response->body, nullptr, false), list);
  }
  return kExitOk;
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int Up(const std::string& data_dir, const std::string& listen) {
  server::DaemonOptions options;
  options.data_dir = data_dir.empty() ? DefaultDataDir() : fs::path(data_dir);
  options.listen = listen;
  options.embedded = true;
  options.runner_binary = server::FindRunnerBesideSelf();
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  auto ran = server::RunDaemon(options, g_stop, [&](const std::string& url, const fs::path& token) {
    std::printf("berth is up at %s\nadmin token: %s\ndata folder: %s\nstop with Ctrl-C\n",
                url.c_str(), token.c_str(), options.data_dir.c_str());
    std::fflush(stdout);
  });
  if (!ran) {
    std::fprintf(stderr, "error: %s\n", ran.error().ToString().c_str());
    return kExitUnavailable;
  }
  return kExitOk;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"berth: Terraform and OpenTofu runs in ephemeral runners"};
  app.require_subcommand(1);
  Globals g;
  app.add_option("--org", g.org, "organization (default: BERTH_ORG, the config file, or default)");
  app.add_option("--data-dir", g.data_dir, "the data folder of a local `berth up`")
      ->envname("BERTH_DATA_DIR");
  app.add_option("-o,--output", g.output, "table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));

  std::string listen = "127.0.0.1:8480";
  auto* up = app.add_subcommand(
      "up", "run berthd here, in the foreground, with SQLite in the data folder");
  up->add_option("--listen", listen, "ADDRESS:PORT");

  std::string kind_word, id, project, runner_filter;
  BodyFlags body_flags;
  bool dry_run = false;
  auto with_body = [&](CLI::App* cmd) {
    cmd->add_option("--set-yaml", body_flags.set_yaml, "YAML, or @file");
    cmd->add_option("--set-json", body_flags.set_json, "JSON, or @file");
    cmd->add_option("--set", body_flags.set, "key.path=value");
  };
  auto* create = app.add_subcommand("create", "create an object");
  auto* get = app.add_subcommand("get", "show an object, or list them");
  auto* update = app.add_subcommand("update", "change an object (a merge of what is given)");
  auto* remove = app.add_subcommand("delete", "delete an object");
  for (auto* cmd : {create, get, update, remove}) {
    cmd->add_option("kind", kind_word,
                    "runner, runner-rule, project, env-type, env (plural to list)")
        ->required();
    cmd->add_option("id", id, "the object's id");
    cmd->add_option("--project", project, "the project of an env");
  }
  with_body(create);
  with_body(update);
  get->add_option("--runner", runner_filter, "with runner-rules: only this runner's");
  auto* refresh =
      app.add_subcommand("refresh-runner", "re-evaluate the runner rules for an environment");
  refresh->add_option("env", id, "the environment")->required();
  refresh->add_option("--project", project, "its project")->required();
  refresh->add_flag("--dry-run", dry_run, "say what would change, change nothing");

  RenderPodOptions render_options;
  std::vector<std::string> render_labels;
  auto* render = app.add_subcommand("render", "print what berth would create, create nothing");
  render->require_subcommand(1);
  auto* render_pod = render->add_subcommand(
      "pod", "the runner Pod (or Job) for a runner configuration, with KUBERNETES_* defaults");
  render_pod
      ->add_option("--runner-config", render_options.runner_config,
                   "YAML or JSON: spec.runner or a runner's job")
      ->required();
  render_pod->add_option("--label", render_labels, "KEY=VALUE, a run label (repeatable)");
  render_pod->add_option("--kind", render_options.kind, "pod or job")
      ->check(CLI::IsMember({"pod", "job"}));
  render_pod->add_option("--op", render_options.op, "the operation (default plan)")
      ->check(
          CLI::IsMember({"plan", "apply", "destroy", "refresh", "drift", "output", "validate"}));
  render_pod->add_option("--run-id", render_options.run_id, "names the Pod (default example)");

  // --org, --data-dir and -o work after the subcommand too.
  for (auto* cmd : {up, create, get, update, remove, refresh}) cmd->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (*up) return Up(g.data_dir, listen);
  if (*render_pod) {
    for (const std::string& label : render_labels) {
      auto eq = label.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::fprintf(stderr, "error: --label %s: must be KEY=VALUE\n", label.c_str());
        return kExitUsage;
      }
      render_options.labels[label.substr(0, eq)] = label.substr(eq + 1);
    }
    return RenderPod(render_options);
  }
  if (*refresh) {
    json body = {{"dry_run", dry_run}};
    return Call(g, "POST", "/projects/" + project + "/envs/" + id + "/actions/refresh_runner",
                &body, nullptr, false);
  }

  bool plural = false;
  const Kind* kind = FindKind(kind_word, plural);
  if (kind == nullptr) {
    std::fprintf(stderr,
                 "error: unknown kind \"%s\" (runner, runner-rule, project, env-type, env)\n",
                 kind_word.c_str());
    return kExitUsage;
  }
  if (kind->in_project && project.empty()) {
    std::fprintf(stderr, "error: %s needs --project\n", kind->name.c_str());
    return kExitUsage;
  }
  std::string base = (kind->in_project ? "/projects/" + project + "/" : "/") + kind->collection;
  bool needs_id = !(*get && plural) && !(*create && kind->name == "runner-rule");
  if (needs_id && id.empty()) {
    std::fprintf(stderr, "error: %s needs an id\n", kind->name.c_str());
    return kExitUsage;
  }
  if (*get) {
    if (plural) {
      std::string query = runner_filter.empty() ? "" : "?runner_id=" + runner_filter;
      return Call(g, "GET", base + query, nullptr, kind, true);
    }
    return Call(g, "GET", base + "/" + id, nullptr, kind, false);
  }
  if (*remove) return Call(g, "DELETE", base + "/" + id, nullptr, kind, false, true);
  auto body = BuildBody(body_flags);
  if (!body) {
    std::fprintf(stderr, "error: %s\n", body.error().message.c_str());
    return kExitUsage;
  }
  if (*create) {
    if (!id.empty()) (*body)["id"] = id;
    return Call(g, "POST", base, &*body, kind, false);
  }
  return Call(g, "PATCH", base + "/" + id, &*body, kind, false);
}

}  // namespace berth::cli
