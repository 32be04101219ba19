#include "server/live_run.h"

namespace berth::server {
namespace {

// Kept with the deployment's artifacts, durable like the result beside it.
std::string EndedMarker(const std::string& run_id) {
  return std::string(kRunEndedMarkerPrefix) + run_id;
}

}  // namespace

Result<store::Deployment> LiveDeploymentOfRun(store::Store& store, const std::string& run_id) {
  auto d = store.Deployments().GetByRun(run_id);
  if (!d && d.error().kind == ErrorKind::kNotFound)
    return MakeError(ErrorKind::kFailedPrecondition, "run " + run_id + " is no deployment's run");
  if (!d) return d.error();
  auto ended = store.DeploymentData().GetArtifact(d->org_id, d->id, EndedMarker(run_id));
  if (ended)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "run " + run_id + " has ended (its deployment is " +
                         std::string(DeploymentStateName(d->state)) + ")");
  if (ended.error().kind != ErrorKind::kNotFound) return ended.error();
  return d;
}

Result<void> MarkRunEnded(store::Store& store, const store::Deployment& deployment,
                          const std::string& run_id) {
  return store.DeploymentData().PutArtifact(deployment.org_id, deployment.id,
                                            {.name = EndedMarker(run_id), .run_id = run_id});
}

}  // namespace berth::server
