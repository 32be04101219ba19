#include "server/api/deployment_routes.h"

#include <atomic>
#include <chrono>
#include <filesystem>

#include "core/bounded_json.h"
#include "core/change_list.h"
#include "core/deployment_state.h"
#include "core/run_labels.h"
#include "core/time_format.h"
#include "crypto/random.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

constexpr int kLogChunksPerRead = 256;
// Followed logs open at once (docs/api.md): a dashboard of one token may follow many.
constexpr int kFollowersPerToken = 256;
constexpr int kFollowersInAll = 2048;
// How far back in an environment's deployments the one a queued deployment waits for is looked
// for: a queue longer than this names the newest queued one ahead.
constexpr int kQueueLookBack = 200;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json DeploymentJson(const store::Deployment& d) {
  const json stored = d.spec.ToJson();
  json out = {{"id", d.id},
              {"project_id", d.project_id},
              {"env_id", d.env_id},
              {"sequence", d.sequence},
              {"state", DeploymentStateName(d.state)},
              {"op", DeploymentOpName(d.spec.op)},
              {"source", stored["source"]},
              {"variables", d.spec.VariableNames()},  // by name only: values may be secrets
              {"plan_only", d.spec.plan_only},
              {"approval", stored["approval"]},
              {"labels", stored["labels"]},
              {"created_by", d.spec.created_by.empty() ? json(nullptr) : json(d.spec.created_by)},
              {"run_id", d.run_id.empty() ? json(nullptr) : json(d.run_id)},
              {"replica", d.owner.empty() ? json(nullptr) : json(d.owner)},
              {"transitions", d.transitions},
              {"result", DeploymentResultToJson(d.result)},
              {"created_at", ApiTime(d.created_at)},
              {"updated_at", ApiTime(d.updated_at)}};
  if (d.state == S::kWaitingApproval)
    out["plan"] = d.result.plan ? PlanSummaryToJson(*d.result.plan) : json::object();
  // Which TF ran, and its version (the seed's status.binary), once a run has said.
  if (d.result.end && d.result.end->run)
    out["binary"] = {{"name", d.result.end->run->binary_name},
                     {"version", d.result.end->run->binary_version}};
  return out;
}

// A followed log ends when nothing will be appended: the deployment has ended, or waits for a
// person.
bool LogWillGrow(S state) {
  return state == S::kQueued || state == S::kDispatched || state == S::kRunning;
}

// The next chunks of a deployment's log after position `after` (which moves to their end),
// as text; `full` says whether the read filled its batch (more may be there).
Result<std::string> ReadLogAfter(store::DeploymentDataStore& data, const std::string& org,
                                 const std::string& id, int64_t& after, bool* full = nullptr) {
  auto chunks = data.ReadLog(org, id, after, kLogChunksPerRead);
  if (!chunks) return chunks.error();
  std::string text;
  for (const auto& chunk : *chunks) text += chunk.data;
  if (!chunks->empty()) after = chunks->back().position;
  if (full) *full = static_cast<int>(chunks->size()) == kLogChunksPerRead;
  return text;
}

int64_t QueryInt(const RouteRequest& r, const std::string& name) {
  auto it = r.query.find(name);
  if (it == r.query.end()) return 0;
  return WholeNumber(it->second).value_or(-1);
}

}  // namespace

DeploymentRoutes::DeploymentRoutes(Router& router, store::Store& store,
                                   const TokenGuard& authorized, DeploymentControl& control,
                                   const ApiOptions& options)
    : store_(store),
      authorized_(authorized),
      control_(control),
      options_(options),
      followers_(std::make_unique<FollowerSlots>(kFollowersPerToken, kFollowersInAll)) {
  auto add = [&](const std::string& method, const std::string& path, Scope needed,
                 net::ServerResponse (DeploymentRoutes::*handler)(const RouteRequest&,
                                                                  const Caller&) const) {
    router.Add(method, path, [this, needed, handler](const RouteRequest& r) {
      return authorized_(r, needed, [&](const Caller& c) { return (this->*handler)(r, c); });
    });
  };
  const std::string env_deployments = "/orgs/{org}/projects/{project}/envs/{env}/deployments";
  const std::string one = "/orgs/{org}/deployments/{id}";
  add("POST", "/orgs/{org}/bundles", Scope::kDeploy, &DeploymentRoutes::UploadBundle);
  add("POST", env_deployments, Scope::kDeploy, &DeploymentRoutes::Create);
  add("GET", env_deployments, Scope::kRead, &DeploymentRoutes::List);
  add("GET", one, Scope::kRead, &DeploymentRoutes::Get);
  add("POST", one + "/cancel", Scope::kDeploy, &DeploymentRoutes::Cancel);
  add("POST", one + "/approve", Scope::kApprove, &DeploymentRoutes::Approve);
  add("GET", one + "/logs", Scope::kRead, &DeploymentRoutes::Logs);
  add("GET", one + "/logs/chunks", Scope::kRead, &DeploymentRoutes::LogChunks);
  add("GET", one + "/outputs", Scope::kRead, &DeploymentRoutes::Outputs);
  // Masked as the log is (sensitive values never in it): for every reader, as the log.
  add("GET", one + "/changes", Scope::kRead, &DeploymentRoutes::Changes);
  // Plans and states hold secrets in clear: for those who may deploy, as sensitive outputs.
  add("GET", one + "/artifacts/{name}", Scope::kDeploy, &DeploymentRoutes::Artifact);
}

net::ServerResponse DeploymentRoutes::UploadBundle(const RouteRequest& r, const Caller& c) const {
  auto type = r.http.headers.find("content-type");
  if (type == r.http.headers.end() ||
      type->second.substr(0, type->second.find(';')) != "application/gzip")
    return ErrorResponse(415, "UnsupportedMediaType",
                         "a bundle is a tar.gz archive: send application/gzip");
  const std::string& body = r.http.body;
  if (body.size() < 2 || static_cast<unsigned char>(body[0]) != 0x1f ||
      static_cast<unsigned char>(body[1]) != 0x8b)
    return ErrorResponse(Invalid("$", "must be a gzip-compressed tar archive", "invalid bundle"));
  auto bundle = store_.DeploymentData().PutBundle(c.org, body);
  if (!bundle) return ErrorResponse(bundle.error());
  return JsonResponse(
      201, Dump({{"id", bundle->id}, {"sha256", bundle->sha256}, {"size", body.size()}}));
}

net::ServerResponse DeploymentRoutes::Create(const RouteRequest& r, const Caller& c) const {
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  auto spec = DeploymentSpec::FromRequest(*body);
  if (!spec) return ErrorResponse(spec.error());
  // What only the server can tell: whether the folder is its own to run, the bundle uploaded.
  const std::string& path = spec->source_path;
  const std::string& bundle = spec->source_bundle;
  if (!path.empty()) {
    std::error_code ec;
    if (!options_.allow_server_paths)
      return ErrorResponse(
          InvalidFields("invalid deployment",
                        {{"$.source.path", "is accepted only by an embedded berthd (berth up)"}}));
    if (!std::filesystem::is_directory(path, ec))
      return ErrorResponse(
          Unresolved("$.source.path", "must be a folder on the server", "invalid deployment"));
  }
  if (!bundle.empty()) {
    if (auto found = store_.DeploymentData().GetBundle(c.org, bundle); !found) {
      if (found.error().kind != ErrorKind::kNotFound) return ErrorResponse(found.error());
      return ErrorResponse(Unresolved("$.source.bundle",
                                      "must name an uploaded bundle (no bundle " + bundle + ")",
                                      "invalid deployment"));
    }
  }
  store::Deployment d{.org_id = c.org,
                      .project_id = r.params.at("project"),
                      .env_id = r.params.at("env"),
                      .id = "d-" + crypto::RandomId()};
  d.spec = std::move(*spec);
  d.spec.created_by = c.token_id;
  // Separation of duties: a token that may not approve may not skip approval either.
  if (!c.scopes.Allow(Scope::kApprove)) d.spec.approval_required = true;
  auto env = store_.Get(store::Kind::kEnvironment, c.org, d.project_id, d.env_id);
  if (!env) return ErrorResponse(env.error());
  // The labels it runs with are those of now: a later edit does not change a queued run.
  auto project = store_.Get(store::Kind::kProject, c.org, "", d.project_id);
  if (!project) return ErrorResponse(project.error());
  auto env_labels = ParseLabels(env->body.value("labels", json::object()), "$.labels");
  if (!env_labels) return ErrorResponse(env_labels.error());
  auto labels = EffectiveLabels(project->body.value("labels", json::object()), *env_labels);
  if (!labels) return ErrorResponse(labels.error());
  d.spec.labels = std::move(*labels);
  auto created = store_.Deployments().Create(d);
  if (!created) return ErrorResponse(created.error());
  if (options_.queued) options_.queued->Notify();  // the dispatcher starts it now
  return JsonResponse(201, Dump(DeploymentJson(*created)));
}

net::ServerResponse DeploymentRoutes::List(const RouteRequest& r, const Caller& c) const {
  auto env =
      store_.Get(store::Kind::kEnvironment, c.org, r.params.at("project"), r.params.at("env"));
  if (!env) return ErrorResponse(env.error());
  auto list = store_.Deployments().ListForEnvironment(c.org, r.params.at("project"),
                                                      r.params.at("env"), 100);
  if (!list) return ErrorResponse(list.error());
  json items = json::array();
  for (const auto& d : *list) items.push_back(DeploymentJson(d));
  return JsonResponse(200, Dump({{"items", items}}));
}

Result<json> DeploymentRoutes::DeploymentAhead(const store::Deployment& queued) const {
  // Newest first: what holds the environment, else the queued one just before it.
  auto list = store_.Deployments().ListForEnvironment(queued.org_id, queued.project_id,
                                                      queued.env_id, kQueueLookBack);
  if (!list) return list.error();
  const store::Deployment* ahead = nullptr;
  for (const store::Deployment& d : *list) {
    if (d.state == S::kDispatched || d.state == S::kRunning || d.state == S::kWaitingApproval) {
      ahead = &d;
      break;
    }
    if (d.state == S::kQueued && d.sequence < queued.sequence && ahead == nullptr) ahead = &d;
  }
  if (ahead == nullptr) return Ok(json());
  return Ok(json{{"id", ahead->id}, {"state", DeploymentStateName(ahead->state)}});
}

net::ServerResponse DeploymentRoutes::Get(const RouteRequest& r, const Caller& c) const {
  auto d = store_.Deployments().Get(c.org, r.params.at("id"));
  if (!d) return ErrorResponse(d.error());
  auto events = store_.DeploymentData().Events(c.org, d->id);
  if (!events) return ErrorResponse(events.error());
  json out = DeploymentJson(*d);
  if (d->state == S::kQueued) {
    auto ahead = DeploymentAhead(*d);
    if (!ahead) return ErrorResponse(ahead.error());
    out["waiting_for"] = *ahead;
  }
  out["events"] = json::array();
  for (const store::DeploymentEvent& e : *events) {
    out["events"].push_back({{"run_id", e.run_id},
                             {"type", e.type},
                             {"reason", e.reason},
                             {"message", e.message},
                             {"count", e.count},
                             {"first_at", ApiTime(e.first_at)},
                             {"last_at", ApiTime(e.last_at)}});
  }
  return JsonResponse(200, Dump(out));
}

// 200 when the deployment is cancelled now (it had not started), 202 while its run stops.
net::ServerResponse DeploymentRoutes::Cancel(const RouteRequest& r, const Caller& c) const {
  auto now = control_.Cancel(c.org, r.params.at("id"), "token " + c.token_id);
  if (!now) return ErrorResponse(now.error());
  return JsonResponse(IsTerminal(now->state) ? 200 : 202, Dump(DeploymentJson(*now)));
}

net::ServerResponse DeploymentRoutes::Approve(const RouteRequest& r, const Caller& c) const {
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  static const Schema kSchema = Schema::Object({Required(
      "plan_hash",
      std::move(Schema::String().Pattern("(sha256:)?[0-9a-f]{64}", "a plan hash (sha256:HEX)")))});
  auto valid = ValidateWith(kSchema, std::move(*body));
  if (!valid) return ErrorResponse(valid.error());
  auto approved =
      control_.Approve(c.org, r.params.at("id"), (*valid)["plan_hash"], "token " + c.token_id);
  if (!approved) return ErrorResponse(approved.error());
  return JsonResponse(202, Dump(DeploymentJson(*approved)));
}

net::ServerResponse DeploymentRoutes::LogChunks(const RouteRequest& r, const Caller& c) const {
  constexpr int kPage = 100;
  auto d = store_.Deployments().Get(c.org, r.params.at("id"));
  if (!d) return ErrorResponse(d.error());
  int64_t after = QueryInt(r, "after");
  if (after < 0) return ErrorResponse(Invalid("after", "must be a whole number of at least 0"));
  auto chunks = store_.DeploymentData().ReadLog(c.org, d->id, after, kPage);
  if (!chunks) return ErrorResponse(chunks.error());
  json items = json::array();
  for (const store::LogChunk& chunk : *chunks) {
    items.push_back({{"position", chunk.position},
                     {"run_id", chunk.run_id},
                     {"seq", chunk.seq},
                     {"data", chunk.data}});
  }
  json out = {{"chunks", items}};
  out["next"] =
      chunks->size() == static_cast<size_t>(kPage) ? json(chunks->back().position) : json(nullptr);
  return JsonResponse(200, Dump(out));
}

net::ServerResponse DeploymentRoutes::Logs(const RouteRequest& r, const Caller& c) const {
  const std::string id = r.params.at("id");
  auto d = store_.Deployments().Get(c.org, id);
  if (!d) return ErrorResponse(d.error());
  int64_t after = QueryInt(r, "after");
  if (after < 0) return ErrorResponse(Invalid("after", "must be a whole number of at least 0"));
  auto follow_asked = QueryBool(r, "follow");
  if (!follow_asked) return ErrorResponse(follow_asked.error());
  const bool following = *follow_asked;
  std::string text;
  for (bool full = true; full;) {
    auto batch = ReadLogAfter(store_.DeploymentData(), c.org, id, after, &full);
    if (!batch) return ErrorResponse(batch.error());
    text += *batch;
  }
  net::ServerResponse response{.status = 200};
  response.headers["Content-Type"] = "text/plain; charset=utf-8";
  response.headers["X-Berth-Log-Position"] = std::to_string(after);
  response.body = std::move(text);
  if (!following || !LogWillGrow(d->state)) return response;
  FollowerSlots::Slot slot = followers_->Take(c.token_id);
  if (!slot) {
    auto refused =
        ErrorResponse(429, "ResourceExhausted",
                      "too many followed logs: at most " + std::to_string(followers_->PerToken()) +
                          " per token and " + std::to_string(followers_->Total()) +
                          " in all at once; close one, or read the log with ?after=POSITION");
    refused.headers["Retry-After"] = "5";
    return refused;
  }
  // What the follower last saw of the log feed: a change after it wakes the follower's wait.
  auto seen = std::make_shared<std::atomic<uint64_t>>(0);
  response.next_chunk = [this, org = c.org, id, after, seen,
                         slot = std::move(slot)]() mutable -> std::optional<std::string> {
    if (options_.logs) seen->store(options_.logs->Generation());
    // The state first: chunks a run sent before it ended are stored by the time it has ended.
    auto now = store_.Deployments().Get(org, id);
    auto batch = ReadLogAfter(store_.DeploymentData(), org, id, after);
    if (!now || !batch) return std::nullopt;
    if (!batch->empty()) return std::move(*batch);
    if (!LogWillGrow(now->state)) return std::nullopt;
    return std::string();  // nothing yet: the server waits, holding no thread
  };
  if (options_.logs) {
    // One wake waits in the feed per follower: a quiet hour of one-second waits adds none
    // (each of the server's wakes does the same: it ends the follower's current wait).
    auto waiting = std::make_shared<std::atomic<bool>>(false);
    response.wake_on_change = [feed = options_.logs, seen, waiting](std::function<void()> wake) {
      if (waiting->exchange(true)) return;
      feed->OnChangePast(seen->load(), [waiting, wake = std::move(wake)] {
        waiting->store(false);
        wake();
      });
    };
  }
  return response;
}

net::ServerResponse DeploymentRoutes::Outputs(const RouteRequest& r, const Caller& c) const {
  auto sensitive_asked = QueryBool(r, "sensitive");
  if (!sensitive_asked) return ErrorResponse(sensitive_asked.error());
  const bool reveal = *sensitive_asked;
  if (reveal && !c.scopes.Allow(Scope::kDeploy))
    return ScopeDenied(c, Scope::kDeploy, "sensitive outputs");
  const std::string& id = r.params.at("id");
  if (auto d = store_.Deployments().Get(c.org, id); !d) return ErrorResponse(d.error());
  auto artifact = store_.DeploymentData().GetArtifact(c.org, id, "outputs");
  if (!artifact) return ErrorResponse(artifact.error());
  json doc = json::parse(artifact->content, nullptr, false);
  json outputs = json::object();
  if (!doc.is_object()) doc = json::object();
  for (const auto& [name, output] : doc.items()) {
    if (!output.is_object()) continue;
    bool sensitive = output.value("sensitive", false);
    json entry = {{"sensitive", sensitive}, {"type", output.value("type", json())}};
    entry["value"] = sensitive && !reveal ? json(nullptr) : output.value("value", json());
    if (sensitive && !reveal) entry["redacted"] = true;
    // Sealed by the runner to the log recipient: only its owner's identity opens it.
    auto sealed = output.find("sealed_value");
    if (sensitive && reveal && sealed != output.end() && sealed->is_string())
      entry["sealed_value"] = *sealed;
    outputs[name] = std::move(entry);
  }
  return JsonResponse(200, Dump({{"outputs", outputs}}));
}

// The change list of the deployment's plan (tf/plan_changes.h), as the gateway typed it when
// the plan run sent it; 404 until then, and for a plan no change list was made of (an
// encrypted log's, Terraform's).
net::ServerResponse DeploymentRoutes::Changes(const RouteRequest& r, const Caller& c) const {
  auto artifact = store_.DeploymentData().GetArtifact(c.org, r.params.at("id"), "changes");
  if (!artifact) return ErrorResponse(artifact.error());
  if (c.scopes.Allow(Scope::kDeploy)) return JsonResponse(200, artifact->content);
  // The gateway stored what ParseChangeList typed: berthd's own document.
  return JsonResponse(200,
                      Dump(WithoutValues(ParseBoundedJsonOrNull(artifact->content, kTfDocument))));
}

// The plan file an approval applies, or a state TF could not persist (to restore it with
// `runner run --op=restore` or a rollback): as the runner uploaded them.
net::ServerResponse DeploymentRoutes::Artifact(const RouteRequest& r, const Caller& c) const {
  const std::string& name = r.params.at("name");
  if (name != "plan" && name != "state")
    return ErrorResponse(Invalid("name", "must be plan or state"));
  auto artifact = store_.DeploymentData().GetArtifact(c.org, r.params.at("id"), name);
  if (!artifact) return ErrorResponse(artifact.error());
  net::ServerResponse response{.status = 200};
  response.headers["Content-Type"] = "application/octet-stream";
  response.headers["X-Berth-Run"] = artifact->run_id;
  response.headers["X-Berth-Sha256"] = artifact->sha256;
  response.body = std::move(artifact->content);
  return response;
}

}  // namespace berth::server
