#include "server/live_run.h"

namespace berth::server {
namespace {

// Kept with the deployment's artifacts, durable like the result beside it.
std::string EndedMarker(const std::string& run_id) {
  return std::string(kRunEndedMarkerPrefix) + run_id;
}

// The refusal of a run that is no deployment's (a lookup that found nothing).
Error NotADeploymentsRun(const Error& lookup, const std::string& run_id) {
  if (lookup.kind != ErrorKind::kNotFound) return lookup;
  return MakeError(ErrorKind::kFailedPrecondition, "run " + run_id + " is no deployment's run");
}

// Refused once the run is marked ended.
Result<void> NotEnded(store::Store& store, const std::string& org, const std::string& deployment,
                      DeploymentState state, const std::string& run_id) {
  auto ended = store.DeploymentData().GetArtifact(org, deployment, EndedMarker(run_id));
  if (ended)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "run " + run_id + " has ended (its deployment is " +
                         std::string(DeploymentStateName(state)) + ")");
  if (ended.error().kind != ErrorKind::kNotFound) return ended.error();
  return {};
}

}  // namespace

Result<store::Deployment> LiveDeploymentOfRun(store::Store& store, const std::string& run_id) {
  auto d = store.Deployments().GetByRun(run_id);
  if (!d) return NotADeploymentsRun(d.error(), run_id);
  if (auto live = NotEnded(store, d->org_id, d->id, d->state, run_id); !live) return live.error();
  return d;
}

Result<void> RunIsLive(store::Store& store, const std::string& run_id) {
  auto owner = store.Deployments().OwnerOfRun(run_id);
  if (!owner) return NotADeploymentsRun(owner.error(), run_id);
  return NotEnded(store, owner->org_id, owner->deployment_id, owner->state, run_id);
}

Result<void> MarkRunEnded(store::Store& store, const store::Deployment& deployment,
                          const std::string& run_id) {
  return store.DeploymentData().PutArtifact(deployment.org_id, deployment.id,
                                            {.name = EndedMarker(run_id), .run_id = run_id});
}

}  // namespace berth::server
