#include "server/approved_apply.h"

#include "crypto/random.h"

namespace berth::server {

std::string ApplyRunId(const std::string& deployment_id) { return deployment_id + "-apply"; }

Result<ApprovedPlan> ApprovedPlanOf(store::Store& store, const store::Deployment& d) {
  auto plan_file = store.DeploymentData().GetArtifact(d.org_id, d.id, "plan");
  if (!plan_file) return plan_file.error();
  return ApprovedPlan{.hash = d.result.PlanHash(), .sha256 = plan_file->sha256};
}

std::string RunOpOf(const store::Deployment& d) { return RunOpOf(d, d.run_id); }

std::string RunOpOf(const store::Deployment& d, const std::string& run_id) {
  if (d.spec.PlanOnly() || (d.spec.NeedsApproval() && run_id != ApplyRunId(d.id))) return "plan";
  return std::string(DeploymentOpName(d.spec.op));
}

Result<std::string> MintRunTokenOf(const store::Deployment& d, const std::string& run_id,
                                   std::chrono::seconds lifetime,
                                   const crypto::Ed25519Signer& signer, int64_t now) {
  return crypto::MintRunToken(
      {run_id, std::string(crypto::kRunTokenAudience), now, now + lifetime.count(),
       crypto::RandomToken(16), d.Environment().Key()},
      signer);
}

Result<void> MarkHandedOver(store::Store& store, const store::Deployment& d,
                            const std::string& apply_run) {
  return store.DeploymentData().PutArtifact(
      d.org_id, d.id,
      {.name = std::string(kHandoverMarkerPrefix) + apply_run, .run_id = apply_run});
}

Result<void> HandedOver(store::Store& store, const store::Deployment& d,
                        const std::string& apply_run) {
  auto marker = store.DeploymentData().GetArtifact(d.org_id, d.id,
                                                   std::string(kHandoverMarkerPrefix) + apply_run);
  if (!marker) return marker.error();
  return {};
}

}  // namespace berth::server
