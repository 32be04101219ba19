#include "server/dispatch/deployment_events.h"

namespace berth::server {

void RecordDeploymentEvent(store::Store& store, sys::Logger& log, const std::string& org,
                           const std::string& deployment, const std::string& run_id,
                           const launch::LaunchEvent& event) {
  store::DeploymentEvent e{.run_id = run_id,
                           .type = event.warning ? "Warning" : "Normal",
                           .reason = event.reason,
                           .message = event.message};
  log.Info("deployment event", {{"org", org},
                                {"deployment", deployment},
                                {"run", run_id},
                                {"type", e.type},
                                {"reason", e.reason},
                                {"message", e.message}});
  auto stored = store.DeploymentData().AppendEvent(org, deployment, e);
  if (!stored) {
    log.Error("event not stored", {{"deployment", deployment}, {"why", stored.error().message}});
    return;
  }
  if (stored->count > 1) return;
  // Numbered by the event's place, under a name no runner uses: stored once, whoever retries.
  auto logged = store.DeploymentData().AppendLog(
      org, deployment, run_id + "/events", stored->position,
      "[berth] " + e.type + " " + e.reason + ": " + e.message + "\n");
  if (!logged)
    log.Error("event not logged", {{"deployment", deployment}, {"why", logged.error().message}});
}

}  // namespace berth::server
