#include "server/gateway/run_gateway.h"

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/bounded_json.h"
#include "core/change_list.h"
#include "core/decimal.h"
#include "core/run_result.h"
#include "crypto/jws.h"
#include "crypto/random.h"
#include "net/request_fields.h"
#include "server/approved_apply.h"
#include "server/live_run.h"
#include "server/run_inputs.h"

namespace berth::server {
namespace {

using nlohmann::json;

net::ServerResponse Bytes(std::string body, std::string content_type) {
  net::ServerResponse response{.status = 200};
  response.headers["Content-Type"] = std::move(content_type);
  response.body = std::move(body);
  return response;
}

// Where an environment's state encryption key is kept (sealed, like every shared secret).
std::string StateKeyName(const EnvironmentRef& env) { return "state-key/" + env.Key(); }

bool IsArtifactName(const std::string& name) {
  return name == "plan" || name == "outputs" || name == "state" || name == "changes";
}

}  // namespace

RunGateway::RunGateway(store::Store& store, RunGatewayOptions options)
    : store_(store),
      options_(std::move(options)),
      tokens_(options_.public_key),
      clock_(options_.clock ? *options_.clock : SystemClock::Instance()) {
  const std::string run = "/runs/v1/{run}";
  auto add = [this](const std::string& method, const std::string& path, auto handler) {
    router_.Add(method, path, [this, handler](const RouteRequest& r) {
      return ForOwnRun(r, [&](const store::Deployment& d) { return handler(r, d); });
    });
  };
  add("GET", run + "/bundle", [this](const RouteRequest&, const auto& d) { return Bundle(d); });
  add("GET", run + "/inputs", [this](const RouteRequest&, const auto& d) { return Inputs(d); });
  add("GET", run + "/plan", [this](const RouteRequest&, const auto& d) { return Plan(d); });
  add("GET", run + "/plan-key", [this](const RouteRequest&, const auto& d) { return PlanKey(d); });
  add("GET", run + "/state-key",
      [this](const RouteRequest&, const auto& d) { return StateKey(d); });
  add("GET", run + "/id-token",
      [this](const RouteRequest& r, const auto& d) { return IdToken(r.params.at("run"), d); });
  add("POST", run + "/logs",
      [this](const RouteRequest& r, const auto& d) { return AppendLog(r, d); });
  add("PUT", run + "/artifacts/{name}",
      [this](const RouteRequest& r, const auto& d) { return PutArtifact(r, d); });
  add("POST", run + "/result",
      [this](const RouteRequest& r, const auto& d) { return PostResult(r, d); });
  router_.Add("GET", run + "/next", [this](const RouteRequest& r) { return Next(r); });
}

Result<crypto::RunToken> RunGateway::TokenForRun(const RouteRequest& r,
                                                 net::ServerResponse& refusal) const {
  const std::string& run = r.params.at("run");
  auto token = tokens_.Verify(net::RequestCredential(r.http), crypto::kRunTokenAudience,
                              clock_.WallSeconds());
  if (!token) {
    refusal =
        ErrorResponse(401, "Unauthenticated", "a run token is required: " + token.error().message);
    refusal.headers["WWW-Authenticate"] = "Bearer";
    return token.error();
  }
  if (token->run_id != run) {
    refusal = ErrorResponse(403, "PermissionDenied",
                            "the token is for run " + token->run_id + ", not " + run);
    return MakeError(ErrorKind::kPermissionDenied, "another run's token");
  }
  return token;
}

net::ServerResponse RunGateway::ForOwnRun(const RouteRequest& r, const Body& body) const {
  net::ServerResponse refusal;
  if (auto token = TokenForRun(r, refusal); !token) return refusal;
  auto d = LiveDeploymentOfRun(store_, r.params.at("run"));
  if (!d) return ErrorResponse(d.error());
  return body(*d);
}

net::ServerResponse RunGateway::Next(const RouteRequest& r) const {
  net::ServerResponse refusal;
  auto token = TokenForRun(r, refusal);
  if (!token) return refusal;
  const std::string& plan_run = token->run_id;
  auto gone = [&plan_run](const std::string& why) {
    return ErrorResponse(410, "Gone", "run " + plan_run + " is handed no apply: " + why);
  };
  auto where = EnvironmentRef::FromKey(token->scope);
  // A deployment's first run, its plan, has the deployment's id.
  auto d = where ? store_.Deployments().Get(where->org, plan_run)
                 : Result<store::Deployment>(where.error());
  if (!d || d->Environment().Key() != token->scope) return gone("it is no deployment's plan run");
  const std::string apply_run = ApplyRunId(d->id);
  const json wait = {{"wait", true}};
  // The plan run is still the deployment's until the dispatcher has taken in its result.
  if (d->run_id == plan_run && !IsTerminal(d->state)) return JsonResponse(200, wait.dump());
  bool applying = d->run_id == apply_run && (d->state == DeploymentState::kDispatched ||
                                             d->state == DeploymentState::kRunning);
  if (!applying)
    return gone("deployment " + d->id + " is " + std::string(DeploymentStateName(d->state)));
  auto handed = HandedOver(store_, *d, apply_run);
  if (!handed && handed.error().kind != ErrorKind::kNotFound) return ErrorResponse(handed.error());
  if (!handed) {
    // The dispatcher marks a handover before it launches the apply: a dispatched apply may
    // still be handed; a running one was given a runner of its own.
    if (d->state == DeploymentState::kDispatched) return JsonResponse(200, wait.dump());
    return gone("its apply runs in a runner of its own");
  }
  if (options_.signer == nullptr) return gone("this berthd hands over no applies");
  auto plan = ApprovedPlanOf(store_, *d);
  if (!plan) return ErrorResponse(plan.error());
  auto apply_token = MintRunTokenOf(*d, apply_run, options_.token_lifetime, *options_.signer,
                                    clock_.WallSeconds());
  if (!apply_token) return ErrorResponse(apply_token.error());
  return JsonResponse(200, json{{"op", std::string(DeploymentOpName(d->spec.op))},
                                {"run_id", apply_run},
                                {"token", *apply_token},
                                {"approved_plan", plan->hash},
                                {"approved_plan_sha256", plan->sha256}}
                               .dump());
}

net::ServerResponse RunGateway::Bundle(const store::Deployment& d) const {
  const std::string& id = d.spec.source_bundle;
  if (id.empty())
    return ErrorResponse(404, "NotFound",
                         "deployment " + d.id + " runs a folder on the server, not a bundle");
  auto bundle = store_.DeploymentData().GetBundle(d.org_id, id);
  if (!bundle) return ErrorResponse(bundle.error());
  return Bytes(std::move(bundle->content), "application/gzip");
}

net::ServerResponse RunGateway::Inputs(const store::Deployment& d) const {
  std::string rendered = RenderInputs(d);
  auto response = Bytes(rendered, "application/json");
  response.headers["X-Berth-Inputs-Hash"] = InputsHash(rendered);
  return response;
}

net::ServerResponse RunGateway::Plan(const store::Deployment& d) const {
  auto plan = store_.DeploymentData().GetArtifact(d.org_id, d.id, "plan");
  if (!plan) return ErrorResponse(plan.error());
  return Bytes(std::move(plan->content), "application/octet-stream");
}

net::ServerResponse RunGateway::PlanKey(const store::Deployment& d) const {
  // Made once per environment, by whichever berthd asks first; every replica reads the same.
  // Not one per organization: the same secret values in two environments would plan to the
  // same hash, telling anyone who sees both that they share them.
  auto key =
      store_.EnsureSharedSecret("plan-key/" + d.Environment().Key(), crypto::RandomToken(32));
  if (!key) return ErrorResponse(key.error());
  return Bytes(std::move(*key), "application/octet-stream");
}

net::ServerResponse RunGateway::IdToken(const std::string& run, const store::Deployment& d) const {
  auto environment = store_.Get(store::Kind::kEnvironment, d.org_id, d.project_id, d.env_id);
  if (!environment) return ErrorResponse(environment.error());
  const json asked = environment->body.value("id_token", json());
  if (!asked.is_object() || options_.issuer == nullptr)
    return ErrorResponse(
        404, "NotFound",
        "environment " + d.Environment().Key() + " asks for no ID token (its id_token is not set)");
  const std::string phase = RunOpOf(d) == "plan" ? "plan" : "apply";
  const auto runner = environment->columns.find("runner_id");
  json claims = {
      {"sub",
       "org:" + d.org_id + ":project:" + d.project_id + ":env:" + d.env_id + ":phase:" + phase},
      {"aud", asked.value("audience", "")},
      {"org", d.org_id},
      {"project", d.project_id},
      {"environment", d.env_id},
      {"phase", phase},
      {"deployment", d.id},
      {"run", run},
      {"runner", runner != environment->columns.end() && runner->second ? json(*runner->second)
                                                                        : json(nullptr)}};
  // An apply names the plan it was approved to make: a trust policy may pin it.
  if (phase == "apply" && d.spec.NeedsApproval()) {
    auto approved = ApprovedPlanOf(store_, d);
    if (!approved) return ErrorResponse(approved.error());
    claims["plan_hash"] = approved->hash;
  }
  auto token = options_.issuer->Mint(std::move(claims), options_.token_lifetime);
  if (!token) return ErrorResponse(token.error());
  // The token, and the clouds whose SDKs the runner points at it.
  json answer = {{"token", *token}};
  for (const char* cloud : {"aws", "azure", "gcp"})
    if (asked.contains(cloud) && asked[cloud].is_object()) answer[cloud] = asked[cloud];
  return Bytes(answer.dump(), "application/json");
}

net::ServerResponse RunGateway::AppendLog(const RouteRequest& r, const store::Deployment& d) const {
  auto it = r.query.find("seq");
  int64_t seq = it == r.query.end() ? 0 : ParseDecimal<int64_t>(it->second).value_or(0);
  if (seq < 1)
    return ErrorResponse(
        InvalidFields("invalid log chunk", {{"seq", "must be a whole number of at least 1"}}));
  if (r.http.body.size() > options_.max_log_chunk)
    return ErrorResponse(InvalidFields(
        "invalid log chunk",
        {{"body", "must be at most " + std::to_string(options_.max_log_chunk) + " bytes"}}));
  auto stored = store_.DeploymentData().AppendLog(d.org_id, d.id, d.run_id, seq, r.http.body);
  if (!stored) return ErrorResponse(stored.error());
  if (*stored && options_.feed) options_.feed->Notify();
  return JsonResponse(200, json{{"stored", *stored}}.dump());
}

namespace {

// Why an outputs document is not `output -json`'s shape, or empty. The runner shares its Pod
// with the module: what the outputs route reads (sensitive flags, sealed values) must have the
// type it expects, or a forged flag could reveal a sensitive value or fail every read.
std::string OutputsRule(std::string_view body) {
  auto doc = ParseBoundedJson(body, kTfDocument);
  if (!doc) return "outputs are refused: " + doc.error().message;
  if (!doc->is_object()) return "outputs must be an object of outputs by name";
  for (const auto& [output, entry] : doc->items()) {
    if (!entry.is_object()) return "output " + output + " must be an object";
    if (!entry.contains("sensitive") || !entry["sensitive"].is_boolean())
      return "output " + output + ": sensitive must be true or false";
    if (entry.contains("sealed_value") && !entry["sealed_value"].is_string())
      return "output " + output + ": sealed_value must be a string";
  }
  return {};
}

}  // namespace

net::ServerResponse RunGateway::PutArtifact(const RouteRequest& r,
                                            const store::Deployment& d) const {
  const std::string& name = r.params.at("name");
  if (!IsArtifactName(name))
    return ErrorResponse(
        InvalidFields("invalid artifact", {{"name", "must be plan, outputs, state or changes"}}));
  if (name == "outputs") {
    if (auto rule = OutputsRule(r.http.body); !rule.empty())
      return ErrorResponse(InvalidFields("invalid artifact", {{"body", rule}}));
  }
  std::string content = r.http.body;
  if (name == "changes") {
    // Shown to every reader of the deployment: only what the parser typed is kept.
    auto changes = ParseChangeList(content);
    if (!changes) return ErrorResponse(changes.error());
    content = changes->dump();
  }
  const size_t put_size = content.size();
  auto put = store_.DeploymentData().PutArtifact(
      d.org_id, d.id, {.name = name, .run_id = d.run_id, .content = std::move(content)});
  if (!put) return ErrorResponse(put.error());
  return JsonResponse(200, json{{"name", name}, {"size", put_size}}.dump());
}

net::ServerResponse RunGateway::PostResult(const RouteRequest& r,
                                           const store::Deployment& d) const {
  // Only what the parser typed is kept: a runner that shares its Pod with a hostile module
  // cannot put anything else into berthd's store.
  auto result = ParseRunResult(r.http.body);
  if (!result) return ErrorResponse(result.error());
  auto put = store_.DeploymentData().PutArtifact(d.org_id, d.id,
                                                 {.name = "result:" + d.run_id,
                                                  .run_id = d.run_id,
                                                  .content = RunResultToJson(*result).dump()});
  if (!put) return ErrorResponse(put.error());
  return JsonResponse(200, "{}");
}

net::ServerResponse RunGateway::StateKey(const store::Deployment& d) const {
  auto env = store_.Get(store::Kind::kEnvironment, d.org_id, d.project_id, d.env_id);
  if (!env) return ErrorResponse(env.error());
  if (env->body.value("state_encryption", "none") != "berth")
    return ErrorResponse(404, "NotFound",
                         "environment " + d.project_id + "/" + d.env_id +
                             " does not encrypt its state (state_encryption is not berth)");
  auto key = store_.EnsureSharedSecret(StateKeyName(d.Environment()),
                                       Base64Encode(crypto::RandomBytes(32)));
  if (!key) return ErrorResponse(key.error());
  return Bytes(std::move(*key), "text/plain");
}

}  // namespace berth::server
