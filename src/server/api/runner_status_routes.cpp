#include "server/api/runner_status_routes.h"

#include <set>

namespace berth::server {
namespace {

using nlohmann::json;

json CommandJson(const store::RunnerCommand& c) {
  return {{"seq", c.seq},
          {"kind", c.kind},
          {"run_id", c.run_id},
          {"state", c.state},
          {"created_at", ApiTime(c.created_at)},
          {"expires_at", ApiTime(c.expires_at)},
          {"deliveries", c.deliveries},
          {"agent", c.agent},
          {"reason", c.reason}};
}

}  // namespace

RunnerStatusRoutes::RunnerStatusRoutes(Router& router, store::Store& store,
                                       const TokenGuard& authorized, Clock& clock,
                                       ClusterChecker check)
    : store_(store), authorized_(authorized), clock_(clock), check_(std::move(check)) {
  router.Add("GET", "/orgs/{org}/runners/{id}/status", [this](const RouteRequest& r) {
    return authorized_(r, Scope::kRead, [&](const Caller& c) { return Status(r, c); });
  });
  router.Add("GET", "/orgs/{org}/runners/{id}/commands", [this](const RouteRequest& r) {
    return authorized_(r, Scope::kRead, [&](const Caller& c) { return Commands(r, c); });
  });
  // configure: a check makes berthd call out to the cluster with its credentials there.
  router.Add("POST", "/orgs/{org}/runners/{id}/check", [this](const RouteRequest& r) {
    return authorized_(r, Scope::kConfigure, [&](const Caller& c) { return Check(r, c); });
  });
}

net::ServerResponse RunnerStatusRoutes::Check(const RouteRequest& r, const Caller& c) const {
  const std::string& id = r.params.at("id");
  auto runner = store_.Get(store::Kind::kRunner, c.org, "", id);
  if (!runner) return ErrorResponse(runner.error());
  const std::string type = runner->columns["runner_type"].value_or("");
  if (type != "kubernetes")
    return ErrorResponse(MakeError(
        ErrorKind::kFailedPrecondition,
        "runner " + id + " is " + type + ": only a kubernetes runner has a cluster berthd checks"));
  if (!check_)
    return ErrorResponse(MakeError(ErrorKind::kFailedPrecondition,
                                   "this berthd runs no kubernetes runners (start it with "
                                   "--kubernetes)"));
  auto check = check_(c.org, id, runner->body.value("runner_configuration", json::object()));
  if (!check) return ErrorResponse(check.error());
  const bool ok = check->error.empty() && check->missing.empty();
  return JsonResponse(200, json{{"runner_id", id},
                                {"ok", ok},
                                {"cluster", check->cluster},
                                {"credential", check->credential},
                                {"namespace", check->ns},
                                {"user", check->user},
                                {"groups", check->groups},
                                {"missing", check->missing},
                                {"error", check->error}}
                               .dump());
}

net::ServerResponse RunnerStatusRoutes::Status(const RouteRequest& r, const Caller& c) const {
  const std::string& id = r.params.at("id");
  auto runner = store_.Get(store::Kind::kRunner, c.org, "", id);
  if (!runner) return ErrorResponse(runner.error());
  std::string type = runner->columns["runner_type"].value_or("");
  json out = {{"runner_id", id}, {"type", type}};
  if (type != "kubernetes-agent") return JsonResponse(200, out.dump());
  auto agents = store_.Agents().Agents(c.org, id);
  if (!agents) return ErrorResponse(agents.error());
  auto depth = store_.Agents().Depth(c.org, id);
  if (!depth) return ErrorResponse(depth.error());
  auto rejected = store_.Agents().List(c.org, id, "rejected", 1000);
  if (!rejected) return ErrorResponse(rejected.error());
  int64_t now = clock_.WallMillis();
  json seen = json::array();
  for (const store::AgentSeen& a : *agents) {
    seen.push_back({{"name", a.agent},
                    {"version", a.version},
                    {"last_poll_at", ApiTime(a.last_poll_at)},
                    {"connected", now - a.last_poll_at <= store::kAgentConnectedWithinMs}});
  }
  const store::AgentSeen* latest = agents->empty() ? nullptr : &agents->front();
  out["agent"] = {{"connected", latest != nullptr &&
                                    now - latest->last_poll_at <= store::kAgentConnectedWithinMs},
                  {"last_poll_at", latest ? json(ApiTime(latest->last_poll_at)) : json()},
                  {"version", latest ? json(latest->version) : json()},
                  {"agents", seen}};
  out["queue_depth"] = *depth;
  out["rejected_commands"] = rejected->size();
  return JsonResponse(200, out.dump());
}

net::ServerResponse RunnerStatusRoutes::Commands(const RouteRequest& r, const Caller& c) const {
  const std::string& id = r.params.at("id");
  auto runner = store_.Get(store::Kind::kRunner, c.org, "", id);
  if (!runner) return ErrorResponse(runner.error());
  // No state: all of them.
  std::string state = r.query.count("state") ? r.query.at("state") : "";
  static const std::set<std::string> kStates = {"queued",   "leased",  "done",
                                                "rejected", "expired", "dropped"};
  if (r.query.count("state") && !kStates.contains(state))
    return ErrorResponse(
        MakeError(ErrorKind::kInvalidArgument,
                  "state: must be one of queued, leased, done, rejected, expired, dropped"));
  auto commands = store_.Agents().List(c.org, id, state, 100);
  if (!commands) return ErrorResponse(commands.error());
  json items = json::array();
  for (const auto& command : *commands) items.push_back(CommandJson(command));
  return JsonResponse(200, json{{"items", items}}.dump());
}

}  // namespace berth::server
