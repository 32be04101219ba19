#include "cli/deploy.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/body.h"
#include "cli/cli.h"
#include "cli/log_decryption.h"
#include "cli/opened_outputs.h"
#include "cli/timings.h"
#include "core/deployment_result.h"
#include "core/deployment_state.h"
#include "core/time_format.h"
#include "sys/files.h"
#include "sys/module_bundle.h"

namespace berth::cli {
namespace {

using nlohmann::json;

constexpr std::chrono::hours kFollowFor{24};

// Prints (or, when quiet, only reads) the deployment's log from position after; with follow,
// until nothing more will come. The position it read up to (followed: where it began), or the
// exit code as a negative number.
int64_t ReadLog(const Connection& c, const std::string& id, int64_t after, bool follow,
                bool quiet = false, LogDecryption* decryption = nullptr) {
  net::HttpRequest request;
  request.timeout = follow ? std::chrono::duration_cast<std::chrono::milliseconds>(kFollowFor)
                           : std::chrono::milliseconds(std::chrono::minutes(5));
  request.on_body = [quiet, decryption](std::string_view piece) {
    if (quiet) return true;
    if (decryption) {
      decryption->Feed(piece);
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    }
    std::fflush(stdout);
    return true;
  };
  std::string query = "?after=" + std::to_string(after) + (follow ? "&follow=true" : "");
  auto response = SendToOrg(c, std::move(request), "/deployments/" + id + "/logs" + query);
  if (!response) {
    std::fprintf(stderr, "error: %s\n", response.error().ToString().c_str());
    return -kExitUnavailable;
  }
  if (response->status >= 300) {
    return -ReportError(response->body, response->status);
  }
  auto position = response->headers.find("x-berth-log-position");
  if (position == response->headers.end()) return after;
  return std::stoll(position->second);
}

std::string PlanLine(const json& plan) {
  return plan.value("hash", "?") + ": " + std::to_string(plan.value("add", 0)) + " to add, " +
         std::to_string(plan.value("change", 0)) + " to change, " +
         std::to_string(plan.value("destroy", 0)) + " to destroy, " +
         std::to_string(plan.value("replace", 0)) + " to replace";
}

void PrintOutputs(const json& outputs) {
  for (const auto& [name, output] : outputs.items()) {
    std::string value = output.value("redacted", false) ? "(sensitive)"
                        : output.contains("sealed_value")
                            ? "(sealed to the log recipient: --identity opens it)"
                        : output["value"].is_string() ? output["value"].get<std::string>()
                                                      : output["value"].dump();
    std::printf("  %s = %s\n", name.c_str(), value.c_str());
  }
}

Result<json> Variables(const DeployOptions& o) {
  json vars = json::object();
  if (!o.var_file.empty()) {
    auto text = sys::ReadFile(o.var_file);
    if (!text) return text.error();
    vars = json::parse(*text, nullptr, false);
    if (!vars.is_object())
      return MakeError(ErrorKind::kInvalidArgument, "--var-file: must be a JSON object");
  }
  for (const std::string& var : o.vars) {
    auto eq = var.find('=');
    if (eq == std::string::npos || eq == 0)
      return MakeError(ErrorKind::kInvalidArgument, "--var " + var + ": must be NAME=VALUE");
    vars[var.substr(0, eq)] = var.substr(eq + 1);
  }
  return Ok(std::move(vars));
}

// The environment, made (in its project, with env_type) when the deploy is its first.
int EnsureEnvironment(const Connection& c, const DeployOptions& o) {
  std::string envs = "/projects/" + o.project + "/envs";
  auto response = SendToOrg(c, {.method = "GET"}, envs + "/" + o.env);
  if (response && response->status == 200) return kExitOk;
  if (!response || response->status != 404) return Send(c, "GET", envs + "/" + o.env).exit_code;
  json env = {{"id", o.env}, {"env_type_id", o.env_type}};
  auto created = Send(c, "POST", envs, env.dump());
  if (created.exit_code == kExitOk)
    std::printf("created environment %s/%s\n", o.project.c_str(), o.env.c_str());
  return created.exit_code;
}

}  // namespace

int Deploy(const Globals& g, const DeployOptions& o) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto vars = Variables(o);
  if (!vars) {
    std::fprintf(stderr, "error: %s\n", vars.error().message.c_str());
    return kExitUsage;
  }
  auto bundle = sys::PackModule(o.folder);
  if (!bundle) {
    std::fprintf(stderr, "error: %s\n", bundle.error().ToString().c_str());
    return kExitUsage;
  }
  auto uploaded = Send(*c, "POST", "/bundles", std::move(*bundle), "application/gzip");
  if (uploaded.exit_code != kExitOk) return uploaded.exit_code;
  if (int ensured = EnsureEnvironment(*c, o); ensured != kExitOk) return ensured;
  json request = {{"op", o.op},
                  {"source", {{"bundle", uploaded.body["id"]}}},
                  {"variables", *vars},
                  {"plan_only", o.plan_only},
                  {"allow_destroy", o.allow_destroy}};
  // --auto-approve asks for no approval: as tofu's flag, one run plans and applies. A plan
  // that stops anyway (--require-approval, or a token that may not skip approval: docs/api.md)
  // is approved as printed, which berthd refuses a token without the approve scope.
  if (o.require_approval) request["approval"] = {{"required", true}};
  auto created = Send(*c, "POST", "/projects/" + o.project + "/envs/" + o.env + "/deployments",
                      request.dump());
  if (created.exit_code != kExitOk) return created.exit_code;
  std::string id = created.body["id"];
  std::printf("deployment %s queued (%s of %s/%s)\n", id.c_str(), o.op.c_str(), o.project.c_str(),
              o.env.c_str());
  std::fflush(stdout);
  if (o.no_wait) return kExitOk;

  int64_t began = ReadLog(*c, id, 0, true);
  if (began < 0) return static_cast<int>(-began);
  auto d = Send(*c, "GET", "/deployments/" + id);
  if (d.exit_code != kExitOk) return d.exit_code;
  if (StateOf(d.body) == DeploymentState::kWaitingApproval) {
    json plan = d.body["plan"];
    std::printf("plan %s\n", PlanLine(plan).c_str());
    if (!o.auto_approve) {
      std::printf("deployment %s waits for approval: berth approve %s --plan-hash %s\n", id.c_str(),
                  id.c_str(), plan.value("hash", "").c_str());
      return kExitOk;
    }
    // The apply's log follows the plan's: from where the plan's ends, read before the apply
    // can add to it.
    int64_t plan_end = ReadLog(*c, id, began, false, true);
    if (plan_end < 0) return static_cast<int>(-plan_end);
    json approval = {{"plan_hash", plan.value("hash", "")}};
    auto approved = Send(*c, "POST", "/deployments/" + id + "/approve", approval.dump());
    if (approved.exit_code != kExitOk) return approved.exit_code;
    std::printf("approved plan %s\n", plan.value("hash", "").c_str());
    std::fflush(stdout);
    if (int64_t read = ReadLog(*c, id, plan_end, true); read < 0) return static_cast<int>(-read);
    d = Send(*c, "GET", "/deployments/" + id);
    if (d.exit_code != kExitOk) return d.exit_code;
  }
  const std::optional<DeploymentState> state = StateOf(d.body);
  std::printf("deployment %s %s\n", id.c_str(), d.body.value("state", "").c_str());
  if (state != DeploymentState::kSucceeded) {
    const DeploymentResult result = DeploymentResultFromJson(d.body["result"]);
    if (result.end && !result.end->succeeded)
      std::printf("  %s: %s\n", result.end->error_kind.c_str(), result.end->error_message.c_str());
    return kExitDeploymentFailed;
  }
  if (o.op != "apply" || o.plan_only) return kExitOk;
  auto outputs = Send(*c, "GET", "/deployments/" + id + "/outputs");
  if (outputs.exit_code != kExitOk) return outputs.exit_code;
  std::printf("outputs:\n");
  PrintOutputs(outputs.body["outputs"]);
  return kExitOk;
}

int ShowLogs(const Globals& g, const std::string& id, bool follow,
             const std::string& identity_file) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  std::optional<LogDecryption> decryption;
  if (!identity_file.empty()) {
    auto identity = sys::ReadFile(identity_file);
    if (!identity) {
      std::fprintf(stderr, "error: --identity: %s\n", identity.error().ToString().c_str());
      return kExitUsage;
    }
    decryption.emplace(
        *identity, [](std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); });
  }
  int64_t position = ReadLog(*c, id, 0, follow, false, decryption ? &*decryption : nullptr);
  if (decryption) decryption->Finish();
  return position < 0 ? static_cast<int>(-position) : kExitOk;
}

int SaveRawLog(const Globals& g, const std::string& id, const std::string& out_dir) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "error: --out: %s\n", ec.message().c_str());
    return kExitUsage;
  }
  // Named by position, the chunk's place in the whole log: a run's own numbers start again
  // with each run of the deployment.
  int64_t after = 0, encrypted = 0, plain = 0;
  while (true) {
    auto page =
        Send(*c, "GET", "/deployments/" + id + "/logs/chunks?after=" + std::to_string(after));
    if (page.exit_code != kExitOk) return page.exit_code;
    for (const json& chunk : page.body.value("chunks", json::array())) {
      const std::string data = chunk.value("data", "");
      bool sealed = data.starts_with("-----BEGIN AGE ENCRYPTED FILE-----");
      auto path =
          std::filesystem::path(out_dir) /
          (std::to_string(chunk.value("position", int64_t{0})) + (sealed ? ".age" : ".log"));
      if (auto written = sys::WriteFileAtomic(path, data); !written) {
        std::fprintf(stderr, "error: %s\n", written.error().ToString().c_str());
        return kExitUnavailable;
      }
      ++(sealed ? encrypted : plain);
    }
    if (!page.body["next"].is_number_integer()) break;
    after = page.body["next"].get<int64_t>();
  }
  std::fprintf(stderr, "%lld encrypted and %lld plain chunks written to %s\n",
               static_cast<long long>(encrypted), static_cast<long long>(plain), out_dir.c_str());
  return kExitOk;
}

int Approve(const Globals& g, const std::string& id, const std::string& plan_hash) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  json approval = {{"plan_hash", plan_hash}};
  auto approved = Send(*c, "POST", "/deployments/" + id + "/approve", approval.dump());
  if (approved.exit_code == kExitOk) std::printf("deployment %s: apply started\n", id.c_str());
  return approved.exit_code;
}

int CancelDeployment(const Globals& g, const std::string& id) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto cancelled = Send(*c, "POST", "/deployments/" + id + "/cancel");
  if (cancelled.exit_code == kExitOk)
    std::printf("deployment %s: %s\n", id.c_str(),
                StateOf(cancelled.body) == DeploymentState::kCancelled ? "cancelled" : "stopping");
  return cancelled.exit_code;
}

int ShowOutputs(const Globals& g, const std::string& id, bool sensitive,
                const std::string& identity_file) {
  std::string identity;
  if (!identity_file.empty()) {
    auto read = sys::ReadFile(identity_file);
    if (!read) {
      std::fprintf(stderr, "error: --identity: %s\n", read.error().ToString().c_str());
      return kExitUsage;
    }
    identity = std::move(*read);
    sensitive = true;
  }
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto outputs =
      Send(*c, "GET", "/deployments/" + id + "/outputs" + (sensitive ? "?sensitive=true" : ""));
  if (outputs.exit_code != kExitOk) return outputs.exit_code;
  if (!identity.empty()) {
    if (auto opened = OpenSealedOutputs(outputs.body["outputs"], identity); !opened) {
      std::fprintf(stderr, "error: --identity: %s\n", opened.error().message.c_str());
      return kExitRefused;
    }
  }
  if (g.output == "json") {
    std::printf("%s\n", outputs.body.dump(2).c_str());
  } else {
    PrintOutputs(outputs.body["outputs"]);
  }
  return kExitOk;
}

int ShowDeployment(const Globals& g, const std::string& id, bool timings) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto d = Send(*c, "GET", "/deployments/" + id);
  if (d.exit_code != kExitOk) return d.exit_code;
  if (timings) {
    json spans = DeploymentTimings(d.body, UnixMillisNow());
    std::printf("%s",
                g.output == "json" ? (spans.dump(2) + "\n").c_str() : RenderTimings(spans).c_str());
    return kExitOk;
  }
  std::printf("%s",
              g.output == "json" ? (d.body.dump(2) + "\n").c_str() : JsonToYaml(d.body).c_str());
  return kExitOk;
}

}  // namespace berth::cli
