#include "runner/apply_handover.h"

#include <poll.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/bounded_json.h"
#include "core/pattern.h"
#include "runner/work_dir.h"

namespace berth::runner {
namespace {

using nlohmann::json;

Error Refused(const std::string& field, const std::string& rule) {
  return MakeError(ErrorKind::kInvalidArgument, "the gateway's handover: " + field + " " + rule);
}

// The text of a required string field that matches regex.
Result<std::string> Field(const json& doc, const std::string& name, const char* regex,
                          const std::string& rule) {
  auto it = doc.find(name);
  if (it == doc.end() || !it->is_string()) return Refused(name, "must be a string");
  std::string value = it->get<std::string>();
  if (!Pattern(regex).Matches(value)) return Refused(name, rule);
  return value;
}

}  // namespace

Result<std::optional<ApplyHandover>> ParseApplyHandover(std::string_view body) {
  auto doc = ParseBoundedJson(body, {.depth = 4, .values = kApiJson.values});
  if (!doc || !doc->is_object()) return Refused("body", "must be a JSON object");
  if (doc->value("wait", false)) return std::optional<ApplyHandover>();
  ApplyHandover handover;
  auto op = Field(*doc, "op", "apply|destroy", "must be apply or destroy");
  auto run = Field(*doc, "run_id", "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "must be a DNS label");
  auto token = Field(*doc, "token", "[A-Za-z0-9_.=-]+", "must be a run token");
  auto plan = Field(*doc, "approved_plan", "sha256:[0-9a-f]{64}", "must be sha256:<64 hex>");
  auto bytes = Field(*doc, "approved_plan_sha256", "[0-9a-f]{64}", "must be 64 hex digits");
  for (const auto* field : {&op, &run, &token, &plan, &bytes}) {
    if (!*field) return field->error();
  }
  return std::optional<ApplyHandover>(ApplyHandover{.op = *op,
                                                    .run_id = *run,
                                                    .token = *token,
                                                    .approved_plan = *plan,
                                                    .approved_plan_sha256 = *bytes});
}

std::optional<ApplyHandover> AwaitApply(GatewayClient& gateway, Duration wait, Duration poll,
                                        int signal_fd, LogSink& log) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + wait;
  log.Line("runner", "the plan waits for approval; this runner is kept for its apply until " +
                         FormatDuration(wait) + " from now");
  for (;;) {
    auto answer = gateway.Fetch("next");
    if (!answer) {
      log.Line("runner", "the apply is not this runner's: " + answer.error().message);
      return std::nullopt;
    }
    auto handover = ParseApplyHandover(*answer);
    if (!handover) {
      log.Error("runner", handover.error().message);
      return std::nullopt;
    }
    if (*handover) {
      log.Line("runner", "approved: this runner applies it as run " + (*handover)->run_id);
      return *handover;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) {
      log.Line("runner", "no approval came within " + FormatDuration(wait) + ": ending");
      return std::nullopt;
    }
    pollfd stop{.fd = signal_fd, .events = POLLIN, .revents = 0};
    auto pause = std::min(left, std::chrono::duration_cast<std::chrono::milliseconds>(poll));
    if (::poll(&stop, signal_fd >= 0 ? 1 : 0, static_cast<int>(pause.count())) > 0) {
      log.Line("runner", "told to stop while waiting for approval: ending");
      return std::nullopt;
    }
  }
}

Result<HandedTokenFile> KeepHandedToken(const std::string& token) {
  auto folder = sys::TempDir::Create("berth-apply-token");
  if (!folder) return folder.error();
  std::filesystem::path path = folder->Path() / "token";
  if (auto written = sys::WriteFileAtomicUnsynced(path, token); !written) return written.error();
  return HandedTokenFile{std::move(*folder), std::move(path)};
}

RunOptions ContinuedApplyOptions(const RunOptions& plan, const ApplyHandover& handover,
                                 const std::string& token_file) {
  RunOptions apply = plan;
  apply.op = handover.op;
  apply.run_id = handover.run_id;
  apply.token_file = token_file;
  apply.approved_plan = handover.approved_plan;
  apply.approved_plan_sha256 = handover.approved_plan_sha256;
  apply.allow_destroy = true;  // an approved plan may delete what its summary showed
  apply.plan_destroy = false;
  apply.await_apply = Duration{0};
  apply.workdir = WorkRoot(plan).string();
  apply.prepared = true;
  return apply;
}

}  // namespace berth::runner
