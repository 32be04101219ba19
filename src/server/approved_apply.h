// The apply run of an approved plan: its id, the plan it applies, and its token. The dispatcher
// launches it; the runner gateway hands it to the plan run's runner when that runner was kept
// for it (a Kubernetes runner's `keep_for_approval`), once the dispatcher has marked it so.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.h"
#include "crypto/jws.h"
#include "store/store.h"

namespace berth::server {

// The apply run's id of a deployment whose plan was approved.
std::string ApplyRunId(const std::string& deployment_id);
// What the deployment's current run does: plan, apply or destroy.
std::string RunOpOf(const store::Deployment& d);
// What run run_id of the deployment does (its plan run, or the apply of its approved plan).
std::string RunOpOf(const store::Deployment& d, const std::string& run_id);

struct ApprovedPlan {
  std::string hash;    // the plan's effect, as the approver saw it ("sha256:...")
  std::string sha256;  // of the plan file's bytes, as the plan run uploaded them
};
Result<ApprovedPlan> ApprovedPlanOf(store::Store& store, const store::Deployment& d);

// A token for one run of d: it opens d's environment and nothing else, until it expires (and
// only while the run is live: live_run.h).
Result<std::string> MintRunTokenOf(const store::Deployment& d, const std::string& run_id,
                                   std::chrono::seconds lifetime,
                                   const crypto::Ed25519Signer& signer, int64_t now);

// The artifact that marks an apply run as handed to its plan run's kept runner.
inline constexpr std::string_view kHandoverMarkerPrefix = "handover:";
Result<void> MarkHandedOver(store::Store& store, const store::Deployment& d,
                            const std::string& apply_run);
// Whether the dispatcher marked it (kNotFound: it did not).
Result<void> HandedOver(store::Store& store, const store::Deployment& d,
                        const std::string& apply_run);

}  // namespace berth::server
