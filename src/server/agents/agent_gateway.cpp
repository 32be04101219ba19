#include "server/agents/agent_gateway.h"

#include <memory>

#include "core/ed25519_key.h"
#include "core/schema.h"
#include "crypto/agent_token.h"
#include "crypto/random.h"
#include "launch/run_outcome.h"
#include "net/request_fields.h"
#include "server/agents/agent_launcher.h"
#include "server/api/request_support.h"
#include "server/live_run.h"

namespace berth::server {
namespace {

using nlohmann::json;

net::ServerResponse NoContent() { return net::ServerResponse{.status = 204}; }

Schema Receipt() { return std::move(Schema::String().MaxLength(64)); }

// The body validated by schema, or the 400 that names every bad field.
Result<json> ValidBody(const RouteRequest& r, const Schema& schema) {
  auto parsed = ParseJsonBody(r);
  if (!parsed)
    return MakeError(ErrorKind::kInvalidArgument, parsed.error().body.empty()
                                                      ? "the body must be a JSON object"
                                                      : parsed.error().body);
  return ValidateWith(schema, std::move(*parsed));
}

std::optional<int64_t> Seq(const RouteRequest& r) { return WholeNumber(r.params.at("seq")); }

}  // namespace

AgentGateway::AgentGateway(store::Store& store, AgentGatewayOptions options)
    : store_(store),
      options_(options),
      clock_(options_.clock ? *options_.clock : SystemClock::Instance()) {
  const std::string base = "/agents/v1/orgs/{org}/runners/{runner}";
  auto add = [this](const std::string& method, const std::string& path, auto handler) {
    router_.Add(method, path, [this, handler](const RouteRequest& r) {
      return ForAgent(r, [&](const Agent& agent) { return handler(r, agent); });
    });
  };
  add("POST", base + "/commands/next",
      [this](const RouteRequest& r, const Agent& a) { return Next(r, a); });
  for (const char* action : {"ack", "reject", "extend"}) {
    add("POST", base + "/commands/{seq}/" + action,
        [this, action](const RouteRequest& r, const Agent& a) { return Settle(r, a, action); });
  }
  add("POST", base + "/runs/{run}/events",
      [this](const RouteRequest& r, const Agent& a) { return Event(r, a); });
  add("POST", base + "/runs/{run}/end",
      [this](const RouteRequest& r, const Agent& a) { return End(r, a); });
  add("GET", base + "/runs", [this](const RouteRequest&, const Agent& a) { return LiveRuns(a); });
}

Result<crypto::AgentToken> AuthenticateAgent(store::Store& store, const std::string& org,
                                             const std::string& runner,
                                             const net::ServerRequest& request, int64_t now) {
  auto record = store.Get(store::Kind::kRunner, org, "", runner);
  if (!record && record.error().kind != ErrorKind::kNotFound) return record.error();
  if (!record || record->columns["runner_type"].value_or("") != "kubernetes-agent")
    return MakeError(ErrorKind::kUnauthenticated,
                     "no kubernetes-agent runner " + runner + " in organization " + org);
  const json configuration = record->body.value("runner_configuration", json::object());
  std::vector<std::string> keys;
  for (const char* name : {"key", "next_key"}) {
    auto pem = configuration.find(name);
    if (pem == configuration.end() || !pem->is_string()) continue;
    if (auto key = ParseEd25519PublicKeyPem(pem->get<std::string>())) keys.push_back(key->raw);
  }
  auto token = crypto::VerifyAgentToken(net::RequestCredential(request), keys, now);
  if (!token) return MakeError(ErrorKind::kUnauthenticated, token.error().message);
  if (token->org != org || token->runner != runner)
    return MakeError(ErrorKind::kPermissionDenied, "the token is for runner " + token->org + "/" +
                                                       token->runner + ", not " + org + "/" +
                                                       runner);
  return token;
}

net::ServerResponse AgentGateway::ForAgent(const RouteRequest& r, const Body& body) const {
  const std::string& org = r.params.at("org");
  const std::string& runner = r.params.at("runner");
  auto refuse = [](const std::string& why) {
    auto response = ErrorResponse(401, "Unauthenticated", why);
    response.headers["WWW-Authenticate"] = "Bearer";
    return response;
  };
  int64_t now = clock_.WallSeconds();
  auto token = AuthenticateAgent(store_, org, runner, r.http, now);
  if (!token && token.error().kind == ErrorKind::kUnauthenticated)
    return refuse(token.error().message);
  if (!token) return ErrorResponse(token.error());
  // Remembered as long as the token is taken (its expiry plus the skew allowed).
  auto fresh = store_.Agents().UseTokenId(
      token->id, (token->expires_at + crypto::kAgentClockSkew) * 1000, now * 1000);
  if (!fresh) return ErrorResponse(fresh.error());
  if (!*fresh) return refuse("agent token: its jti was used before (a replay)");
  return body(Agent{org, runner});
}

Result<std::optional<json>> AgentGateway::TakeNext(const Agent& agent,
                                                   const std::string& name) const {
  int64_t now = clock_.WallMillis();
  std::string receipt = crypto::RandomToken(16);
  auto leased = store_.Agents().Lease(
      agent.org, agent.runner, name, receipt, now,
      now + std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease).count());
  if (!leased) return leased.error();
  if (!*leased) return std::optional<json>();
  const store::RunnerCommand& command = **leased;
  json delivered = {{"seq", command.seq},
                    {"kind", command.kind},
                    {"run_id", command.run_id},
                    {"receipt", command.receipt},
                    {"lease_seconds", options_.lease.count()},
                    {"deliveries", command.deliveries}};
  if (command.kind == kCreateJob) {
    // The run's token is minted now (none waited in the queue), with the scope and expiry the
    // dispatcher gave the run.
    const json& token = command.payload.value("token", json::object());
    auto minted = crypto::MintRunToken(
        {command.run_id, std::string(crypto::kRunTokenAudience), now / 1000,
         token.value("expires_at", int64_t{0}), crypto::RandomToken(16), token.value("scope", "")},
        *options_.signer);
    if (!minted) return minted.error();
    delivered["request"] = command.payload.value("request", json::object());
    delivered["request"]["token"] = *minted;
  }
  return std::optional<json>(std::move(delivered));
}

net::ServerResponse AgentGateway::Next(const RouteRequest& r, const Agent& agent) const {
  static const Schema kSchema = Schema::Object({
      Required("agent", Schema::String().Pattern("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
                                                 "the agent's name (its Pod's)")),
      Optional("version", std::move(Schema::String().MaxLength(64))),
      Optional("wait_seconds", std::move(Schema::Integer().Range(0, 25))),
  });
  auto body = ValidBody(r, kSchema);
  if (!body) return ErrorResponse(body.error());
  std::string name = (*body)["agent"];
  if (auto seen = store_.Agents().RecordPoll(
          {agent.org, agent.runner, name, body->value("version", ""), clock_.WallMillis()});
      !seen)
    return ErrorResponse(seen.error());
  uint64_t generation = options_.commands ? options_.commands->Generation() : 0;
  auto command = TakeNext(agent, name);
  if (!command) return ErrorResponse(command.error());
  auto wait = std::min<int64_t>(body->value("wait_seconds", options_.max_wait.count()),
                                options_.max_wait.count());
  if (*command || wait == 0)
    return JsonResponse(200, json{{"command", command->value_or(json())}}.dump());
  // The poll is held without a thread: the server asks again when a command is queued (or
  // every second) until one is delivered or the wait is over.
  struct HeldPoll {
    std::chrono::steady_clock::time_point until;
    uint64_t generation;
    bool answered = false;
  };
  auto held = std::make_shared<HeldPoll>(
      HeldPoll{std::chrono::steady_clock::now() + std::chrono::seconds(wait), generation});
  net::ServerResponse response = JsonResponse(200, "");
  response.next_chunk = [this, held, agent, name]() -> std::optional<std::string> {
    if (held->answered) return std::nullopt;
    if (options_.commands) held->generation = options_.commands->Generation();
    auto next = TakeNext(agent, name);
    if ((next && *next) || !next || std::chrono::steady_clock::now() >= held->until) {
      held->answered = true;
      return json{{"command", next && *next ? **next : json()}}.dump();
    }
    return std::string();
  };
  if (options_.commands) {
    response.wake_on_change = [feed = options_.commands, held](std::function<void()> wake) {
      feed->OnChangePast(held->generation, std::move(wake));
    };
  }
  return response;
}

net::ServerResponse AgentGateway::Settle(const RouteRequest& r, const Agent& agent,
                                         const std::string& action) const {
  static const Schema kSchema = Schema::Object({
      Required("receipt", Receipt()),
      Optional("reason", std::move(Schema::String().MaxLength(4096))),
  });
  auto body = ValidBody(r, kSchema);
  if (!body) return ErrorResponse(body.error());
  auto seq = Seq(r);
  if (!seq) return ErrorResponse(404, "NotFound", "no command " + r.params.at("seq"));
  const std::string receipt = (*body)["receipt"];
  int64_t now = clock_.WallMillis();
  Result<store::RunnerCommand> settled = MakeError(ErrorKind::kInternal, "unsettled");
  if (action == "ack") {
    settled = store_.Agents().Ack(agent.org, agent.runner, *seq, receipt);
    if (settled && settled->kind == kCreateJob && options_.events) {
      options_.events->OnRunEvent(
          settled->run_id, {.reason = "AgentLaunched",
                            .message = "agent " + settled->agent + " of runner " + agent.runner +
                                       " created the run's Job",
                            .warning = false});
    }
  } else if (action == "extend") {
    settled = store_.Agents().Extend(
        agent.org, agent.runner, *seq, receipt,
        now + std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease).count());
  } else {
    if (!body->contains("reason"))
      return ErrorResponse(MakeError(ErrorKind::kInvalidArgument, "reason: required to reject"));
    settled = store_.Agents().Reject(agent.org, agent.runner, *seq, receipt, (*body)["reason"]);
    // A launch the agent cannot make ends its run now, with the agent's reason.
    if (settled && settled->kind == kCreateJob) {
      auto end = launch::RunnerStopped(
          launch::RunnerEnd::kAgentRejected,
          "the agent could not launch the run: " + body->value("reason", std::string()));
      IgnoreError(store_.Agents().PutRunEnd(
                      {agent.org, agent.runner, settled->run_id, launch::AgentReportOf(end), now}),
                  "an end kept already wins");
      if (options_.ends) options_.ends->Notify();
    }
  }
  if (!settled) return ErrorResponse(settled.error());
  return JsonResponse(200, json{{"seq", settled->seq},
                                {"state", settled->state},
                                {"lease_seconds", options_.lease.count()}}
                               .dump());
}

net::ServerResponse AgentGateway::ForOwnRun(
    const RouteRequest& r, const Agent& agent,
    const std::function<net::ServerResponse()>& body) const {
  const std::string& run = r.params.at("run");
  auto create = store_.Agents().CreateJobOf(agent.org, agent.runner, run);
  if (!create) return ErrorResponse(create.error());
  if (!*create)
    return ErrorResponse(404, "NotFound",
                         "runner " + agent.runner + "'s agents were never asked to run " + run);
  return body();
}

net::ServerResponse AgentGateway::Event(const RouteRequest& r, const Agent& agent) const {
  static const Schema kSchema = Schema::Object({
      Required("reason", Schema::String().Pattern("[A-Z][A-Za-z0-9]{0,63}", "a CamelCase word")),
      Required("message", std::move(Schema::String().MaxLength(4096))),
      Optional("warning", Schema::Bool()),
  });
  auto body = ValidBody(r, kSchema);
  if (!body) return ErrorResponse(body.error());
  return ForOwnRun(r, agent, [&] {
    if (options_.events) {
      options_.events->OnRunEvent(r.params.at("run"), {.reason = (*body)["reason"],
                                                       .message = (*body)["message"],
                                                       .warning = body->value("warning", true)});
    }
    return NoContent();
  });
}

net::ServerResponse AgentGateway::End(const RouteRequest& r, const Agent& agent) const {
  static const Schema kSchema = Schema::Object({
      Required("report", Schema::Object({
                             Optional("exit_code", std::move(Schema::Integer().Range(-1, 255))),
                             Optional("ended_as", std::move(Schema::String().MaxLength(64))),
                             Optional("message", std::move(Schema::String().MaxLength(4096))),
                             Optional("image_id", std::move(Schema::String().MaxLength(512))),
                             Optional("stop_requested", Schema::Bool()),
                         })),
  });
  auto body = ValidBody(r, kSchema);
  if (!body) return ErrorResponse(body.error());
  return ForOwnRun(r, agent, [&] {
    auto kept = store_.Agents().PutRunEnd(
        {agent.org, agent.runner, r.params.at("run"), (*body)["report"], clock_.WallMillis()});
    if (!kept) return ErrorResponse(kept.error());
    if (options_.ends) options_.ends->Notify();
    return JsonResponse(200, json{{"kept", *kept}}.dump());
  });
}

net::ServerResponse AgentGateway::LiveRuns(const Agent& agent) const {
  auto done = store_.Agents().List(agent.org, agent.runner, "done", 1000);
  if (!done) return ErrorResponse(done.error());
  json runs = json::array();
  for (const store::RunnerCommand& command : *done) {
    if (command.kind != kCreateJob || !RunIsLive(store_, command.run_id)) continue;
    runs.push_back(command.payload.value("request", json::object()));
  }
  return JsonResponse(200, json{{"runs", runs}}.dump());
}

}  // namespace berth::server
