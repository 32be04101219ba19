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
#include "cli/connection.h"
#include "cli/deploy.h"
#include "cli/render.h"
#include "cli/token.h"
#include "net/http_client.h"
#include "server/daemon.h"
#include "server/daemon_flags.h"
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

std::string Cell(const json& item, const std::string& pointer) {
  json::json_pointer p(pointer);
  if (!item.contains(p) || item[p].is_null()) return "-";
  const json& v = item[p];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void PrintTable(const Kind& kind, const std::vector<json>& items) {
  std::vector<size_t> widths;
  widths.reserve(kind.columns.size());
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
  headers.reserve(kind.columns.size());
  for (const auto& [header, _] : kind.columns) headers.push_back(header);
  row(headers);
  for (const auto& item : items) {
    std::vector<std::string> cells;
    cells.reserve(kind.columns.size());
    for (const auto& [_, pointer] : kind.columns) cells.push_back(Cell(item, pointer));
    row(cells);
  }
}

void Print(const Globals& g, const Kind* kind, const json& doc, bool list) {
  if (g.output == "json") {
    std::printf("%s\n", doc.dump(2).c_str());
  } else if (g.output != "yaml" && kind != nullptr) {
    std::vector<json> items;
    if (list) {
      for (const auto& i : doc["items"]) items.push_back(i);
    } else {
      items.push_back(doc);
    }
    PrintTable(*kind, items);
  } else {
    std::printf("%s", JsonToYaml(doc).c_str());  // -o yaml, and a document no table shows
  }
}

int Call(const Globals& g, const std::string& method, const std::string& path, const json* body,
         const Kind* kind, bool list, bool quiet = false) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  net::HttpRequest request{.method = method};
  request.headers = {{"Accept", "application/json"}};
  if (body) {
    request.headers.emplace_back(
        "Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json");
    request.body = body->dump();
  }
  auto response = SendToOrg(*c, std::move(request), path);
  if (!response) {
    std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
    return kExitUnavailable;
  }
  if (response->status >= 300) {
    return ReportError(response->body, response->status);
  }
  if (!quiet && !response->body.empty()) {
    Print(g, kind, json::parse(response->body, nullptr, false), list);
  }
  return kExitOk;
}

// A runner with how it is doing (a kubernetes-agent's agents and queue): two reads, one object.
int GetRunner(const Globals& g, const std::string& id, const Kind* kind) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  json runner;
  for (const std::string& path : {"/runners/" + id, "/runners/" + id + "/status"}) {
    net::HttpRequest request{.method = "GET", .headers = {{"Accept", "application/json"}}};
    auto response = SendToOrg(*c, std::move(request), path);
    if (!response) {
      std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
      return kExitUnavailable;
    }
    if (response->status >= 300) return ReportError(response->body, response->status);
    json doc = json::parse(response->body, nullptr, false);
    if (runner.is_null()) {
      runner = std::move(doc);
      continue;
    }
    doc.erase("runner_id");
    doc.erase("type");
    if (doc.is_object() && !doc.empty()) runner["status"] = std::move(doc);
  }
  Print(g, kind, runner, false);
  return kExitOk;
}

// What a kubernetes runner's runs would meet in its cluster: who berthd is there and the rights
// it lacks. Fails (kExitCheckFailed) unless a run would get as far as its Pod.
int CheckRunner(const Globals& g, const std::string& id) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto response = SendToOrg(*c, {.method = "POST", .headers = {{"Accept", "application/json"}}},
                            "/runners/" + id + "/check");
  if (!response) {
    std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
    return kExitUnavailable;
  }
  if (response->status >= 300) return ReportError(response->body, response->status);
  json check = json::parse(response->body, nullptr, false);
  Print(g, nullptr, check, false);
  return check.value("ok", false) ? kExitOk : kExitCheckFailed;
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

// options: what `berth up`'s flags say; data_dir: the CLI's --data-dir (empty: the default).
int Up(server::DaemonOptions options, const std::string& data_dir) {
  options.data_dir = data_dir.empty() ? DefaultDataDir() : fs::path(data_dir);
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

  auto* up = app.add_subcommand(
      "up", "run berthd here, in the foreground, with SQLite in the data folder");
  server::DaemonFlags up_flags(*up, server::DaemonCommand::kBerthUp);

  std::string kind_word, id, project, runner_filter;
  BodyFlags body_flags;
  bool dry_run = false;
  auto with_body = [&](CLI::App* cmd) {
    cmd->add_option("-f,--file", body_flags.file,
                    "the object as YAML or JSON, from a file (its id too, when not given)");
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

  auto* runner = app.add_subcommand("runner", "a runner's own commands");
  runner->require_subcommand(1);
  auto* runner_check = runner->add_subcommand(
      "check", "who a kubernetes runner's runs are in their cluster, and the rights they lack");
  runner_check->add_option("id", id, "the runner")->required();

  RenderPodOptions render_options;
  std::vector<std::string> render_labels;
  auto* render = app.add_subcommand("render", "print what berth would create, create nothing");
  render->require_subcommand(1);
  auto* render_pod = render->add_subcommand(
      "pod", "the runner Pod (or Job) for a runner configuration, with KUBERNETES_* defaults");
  auto* runner_config = render_pod->add_option("--runner-config", render_options.runner_config,
                                               "YAML or JSON: spec.runner or a runner's job");
  auto* terraform = render_pod->add_option(
      "--terraform", render_options.terraform,
      "YAML or JSON: a Terraform object (the runner Pod berth-controller creates)");
  runner_config->excludes(terraform);
  render_pod->add_option("--revision", render_options.revision,
                         "the source revision (app.kubernetes.io/instance=tf-runner-<revision>)");
  // A run's own options; a Terraform object's Pod serves every run, so they are refused there.
  for (CLI::Option* run_option :
       {render_pod->add_option("--label", render_labels, "KEY=VALUE, a run label (repeatable)"),
        render_pod->add_option("--kind", render_options.kind, "pod or job")
            ->check(CLI::IsMember({"pod", "job"})),
        render_pod->add_option("--op", render_options.op, "the operation (default plan)")
            ->check(CLI::IsMember(
                {"plan", "apply", "destroy", "refresh", "drift", "output", "validate"})),
        render_pod->add_option("--run-id", render_options.run_id,
                               "names the Pod (default example)")})
    run_option->excludes(terraform);

  DeployOptions deploy_options;
  auto* deploy = app.add_subcommand(
      "deploy", "bundle a module folder, deploy it to an environment, follow it to its end");
  deploy->add_option("folder", deploy_options.folder, "the module folder")->required();
  deploy->add_option("--env", deploy_options.env, "the environment (made on first use)")
      ->required();
  deploy->add_option("--project", deploy_options.project, "its project (default: default)");
  deploy->add_option("--env-type", deploy_options.env_type,
                     "the type of an environment the deploy makes (default: default)");
  deploy->add_option("--op", deploy_options.op, "apply (default), plan or destroy")
      ->check(CLI::IsMember({"plan", "apply", "destroy"}));
  deploy->add_option("--var", deploy_options.vars, "NAME=VALUE, a TF variable (repeatable)");
  deploy->add_option("--var-file", deploy_options.var_file, "a JSON object of TF variables");
  deploy->add_flag("--plan-only", deploy_options.plan_only, "plan, apply nothing");
  deploy->add_flag("--require-approval", deploy_options.require_approval,
                   "stop at the plan until someone approves it");
  deploy->add_flag("--auto-approve", deploy_options.auto_approve,
                   "alone, plan and apply in one run (as tofu's flag); with "
                   "--require-approval, approve the plan as soon as it is printed");
  deploy->add_flag("--allow-destroy", deploy_options.allow_destroy,
                   "let the apply delete or replace resources");
  deploy->add_flag("--no-wait", deploy_options.no_wait, "queue it, print its id, return");

  bool follow = false, sensitive = false;
  std::string plan_hash;
  auto* logs = app.add_subcommand("logs", "print a deployment's log");
  logs->add_option("id", id, "the deployment")->required();
  logs->add_flag("-f,--follow", follow, "keep printing until its runs have ended");
  std::string identity_file, raw_out;
  auto* identity_flag =
      logs->add_option("--identity", identity_file,
                       "an age identity file (age-keygen's) that decrypts a log its runners "
                       "encrypted to the environment's log_recipient");
  bool raw = false;
  auto* raw_flag = logs->add_flag("--raw", raw,
                                  "write each stored chunk as it is stored to --out "
                                  "(<position>.age when encrypted, else .log)");
  auto* out_flag = logs->add_option("--out", raw_out, "the folder --raw writes to");
  raw_flag->needs(out_flag)->excludes(identity_flag);
  out_flag->needs(raw_flag);
  auto* approve = app.add_subcommand("approve", "apply the plan a deployment waits with");
  approve->add_option("id", id, "the deployment")->required();
  approve->add_option("--plan-hash", plan_hash, "the plan's hash, as printed")->required();
  auto* cancel = app.add_subcommand("cancel", "cancel a deployment (stopping its run)");
  cancel->add_option("id", id, "the deployment")->required();
  auto* outputs = app.add_subcommand("outputs", "print the outputs a deployment left");
  outputs->add_option("id", id, "the deployment")->required();
  outputs->add_flag("--show-sensitive", sensitive, "print sensitive values too");
  outputs->add_option("--identity", identity_file,
                      "an age identity file that opens the sensitive values its runner sealed to "
                      "the environment's log_recipient (implies --show-sensitive)");
  auto* deployment = app.add_subcommand("deployment", "show a deployment");
  deployment->add_option("id", id, "the deployment")->required();
  bool timings = false;
  deployment->add_flag("--timings", timings,
                       "where its time went: the queue, its runner's launch, each run and its TF "
                       "steps, the wait for approval");

  auto* state = app.add_subcommand(
      "state", "an environment's TF state in berth's backend (show and unlock: or its s3 bucket)");
  state->require_subcommand(1);
  auto* state_show =
      state->add_subcommand("show", "its versions, the newest, who holds the lock, its history");
  auto* state_unlock =
      state->add_subcommand("unlock", "break its lock; the reason stays in its history");
  auto* state_push = state->add_subcommand(
      "push", "push a state file (one a run could not persist) as the newest version");
  std::string reason, state_file;
  for (auto* cmd : {state_show, state_unlock, state_push}) {
    cmd->add_option("env", id, "the environment")->required();
    cmd->add_option("--project", project, "its project")->required();
    cmd->fallthrough();
  }
  for (auto* cmd : {state_unlock, state_push})
    cmd->add_option("--reason", reason, "why (kept in the state's history)")->required();
  state_push->add_option("--file", state_file, "the state file (JSON, as tofu writes it)")
      ->required()
      ->check(CLI::ExistingFile);

  TokenOptions token_options;
  auto* token = app.add_subcommand("token", "API tokens: create (shown once), list, revoke");
  token->require_subcommand(1);
  auto* token_create = token->add_subcommand("create", "make a token; prints its secret once");
  token_create
      ->add_option("--scope", token_options.scopes,
                   "read, deploy, approve, configure or admin (repeatable, or comma-separated)")
      ->required()
      ->delimiter(',');
  token_create->add_option("--expires", token_options.expires,
                           "how long it lives, such as 720h (default: until revoked)");
  token_create->add_option("--description", token_options.description, "what it is for");
  auto* token_list = token->add_subcommand("list", "every token: id, scopes, expiry, maker");
  auto* token_revoke = token->add_subcommand("revoke", "revoke a token at once");
  token_revoke->add_option("id", id, "the token's id")->required();
  for (auto* cmd : {token_create, token_list, token_revoke}) cmd->fallthrough();
  auto* ui = app.add_subcommand(
      "ui", "print a one-time login link to the dashboard (opens nothing by itself)");

  // --org, --data-dir and -o work after the subcommand too.
  for (auto* cmd : {up, create, get, update, remove, refresh, deploy, logs, approve, cancel,
                    outputs, deployment, state, token, ui})
    cmd->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (*up) return Up(up_flags.Options(), g.data_dir);
  if (*render_pod) {
    if (render_options.runner_config.empty() == render_options.terraform.empty()) {
      std::fprintf(stderr, "error: render pod: give --runner-config or --terraform\n");
      return kExitUsage;
    }
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
  if (*deploy) return Deploy(g, deploy_options);
  if (*logs && raw) {
    if (follow) {
      std::fprintf(stderr, "error: --raw writes what is stored; it does not --follow\n");
      return kExitUsage;
    }
    return SaveRawLog(g, id, raw_out);
  }
  if (*logs) return ShowLogs(g, id, follow, identity_file);
  if (*approve) return Approve(g, id, plan_hash);
  if (*cancel) return CancelDeployment(g, id);
  if (*outputs) return ShowOutputs(g, id, sensitive, identity_file);
  if (*deployment) return ShowDeployment(g, id, timings);
  if (*token_create) return CreateToken(g, token_options);
  if (*token_list) return ListTokens(g);
  if (*token_revoke) return RevokeToken(g, id);
  if (*ui) return PrintLoginLink(g);
  if (*state) {
    std::string path = "/projects/" + project + "/envs/" + id + "/state";
    if (*state_show) return Call(g, "GET", path, nullptr, nullptr, false);
    json body = {{"reason", reason}};
    if (*state_push) {
      auto text = sys::ReadFile(state_file);
      json doc = text ? json::parse(*text, nullptr, false) : json();
      if (!doc.is_object()) {
        std::fprintf(stderr, "error: --file %s: not a JSON state\n", state_file.c_str());
        return kExitUsage;
      }
      body["state"] = std::move(doc);
      return Call(g, "POST", path + "/versions", &body, nullptr, false);
    }
    return Call(g, "POST", path + "/unlock", &body, nullptr, false);
  }
  if (*runner_check) return CheckRunner(g, id);
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
  // A body is read first: a created object's id may be in its file.
  auto body = *create || *update ? BuildBody(body_flags) : Result<nlohmann::json>(nullptr);
  if (!body) {
    std::fprintf(stderr, "error: %s\n", body.error().message.c_str());
    return kExitUsage;
  }
  const bool id_in_body = *create && body->is_object() && body->contains("id");
  bool needs_id = !(*get && plural) && !(*create && kind->name == "runner-rule") && !id_in_body;
  if (needs_id && id.empty()) {
    std::fprintf(stderr, "error: %s needs an id\n", kind->name.c_str());
    return kExitUsage;
  }
  if (*get) {
    if (plural) {
      std::string query = runner_filter.empty() ? "" : "?runner_id=" + runner_filter;
      return Call(g, "GET", base + query, nullptr, kind, true);
    }
    if (kind->name == "runner") return GetRunner(g, id, kind);
    return Call(g, "GET", base + "/" + id, nullptr, kind, false);
  }
  if (*remove) return Call(g, "DELETE", base + "/" + id, nullptr, kind, false, true);
  if (*create) {
    if (!id.empty()) (*body)["id"] = id;
    return Call(g, "POST", base, &*body, kind, false);
  }
  return Call(g, "PATCH", base + "/" + id, &*body, kind, false);
}

}  // namespace berth::cli
