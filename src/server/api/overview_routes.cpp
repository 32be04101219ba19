#include "server/api/overview_routes.h"

#include <vector>

namespace berth::server {
namespace {

using nlohmann::json;

json Brief(const std::optional<store::Deployment>& d) {
  if (!d) return nullptr;
  return {{"id", d->id},
          {"state", DeploymentStateName(d->state)},
          {"op", DeploymentOpName(d->spec.op)},
          {"created_at", ApiTime(d->created_at)},
          {"updated_at", ApiTime(d->updated_at)}};
}

}  // namespace

OverviewRoutes::OverviewRoutes(Router& router, store::Store& store, const TokenGuard& authorized)
    : store_(store), authorized_(authorized) {
  router.Add("GET", "/orgs/{org}/overview", [this](const RouteRequest& r) {
    return authorized_(r, Scope::kRead, [&](const Caller& c) { return Overview(c); });
  });
}

net::ServerResponse OverviewRoutes::Overview(const Caller& c) const {
  auto projects = store::ListAll(store_, store::Kind::kProject, c.org, "");
  if (!projects) return ErrorResponse(projects.error());
  auto activity = store_.Deployments().ActivityOf(c.org);
  if (!activity) return ErrorResponse(activity.error());
  json environments = json::array();
  for (const store::Record& project : *projects) {
    auto envs = store::ListAll(store_, store::Kind::kEnvironment, c.org, project.id);
    if (!envs) return ErrorResponse(envs.error());
    for (const store::Record& env : *envs) {
      auto runner = env.columns.find("runner_id");
      json entry = {
          {"project_id", project.id},
          {"id", env.id},
          {"display_name", env.body.value("display_name", env.id)},
          {"runner_id",
           runner != env.columns.end() && runner->second ? json(*runner->second) : json(nullptr)},
          {"last_deployment", nullptr},
          {"holder", nullptr},
          {"queued", 0}};
      auto seen = activity->find(project.id + "/" + env.id);
      if (seen != activity->end()) {
        entry["last_deployment"] = Brief(seen->second.newest);
        entry["holder"] = Brief(seen->second.holder);
        entry["queued"] = seen->second.queued;
      }
      environments.push_back(std::move(entry));
    }
  }
  return JsonResponse(200, json{{"environments", std::move(environments)}}.dump());
}

}  // namespace berth::server
