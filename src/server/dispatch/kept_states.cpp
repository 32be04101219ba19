#include "server/dispatch/kept_states.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "core/bounded_json.h"
#include "core/schema.h"
#include "crypto/digest.h"
#include "server/dispatch/deployment_events.h"
#include "server/live_run.h"
#include "server/runner_resolution.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr std::string_view kKeptState = "state";  // the artifact the runner uploads
// Recorded with the deployment once a run's kept state is settled, whichever way.
constexpr std::string_view kSettledPrefix = "state-settled:";
constexpr int kSettledPerPass = 16;

std::string SettledMarker(const std::string& run_id) {
  return std::string(kSettledPrefix) + run_id;
}

// What tells two TF states apart: which state it is (lineage) and how far it has come (serial).
struct StateIdentity {
  std::string lineage;
  int64_t serial = 0;
};

std::optional<StateIdentity> IdentityOf(const std::string& content) {
  json doc = ParseBoundedJsonOrNull(content, kTfDocument);
  if (!doc.is_object()) return std::nullopt;
  auto version = AsWholeNumber(doc.value("version", json()));
  auto serial = AsWholeNumber(doc.value("serial", json()));
  const json lineage = doc.value("lineage", json());
  if (!version || *version < 1 || !serial || *serial < 0 || !lineage.is_string())
    return std::nullopt;
  return StateIdentity{lineage.get<std::string>(), *serial};
}

launch::LaunchEvent NotRescued(const std::string& why) {
  return {.reason = "StateNotRescued",
          .message = "tofu could not persist the state; the state it left was not pushed: " + why +
                     ". It stays as this deployment's state artifact (GET "
                     ".../deployments/{id}/artifacts/state); `berth state push` puts it back"};
}

// Pushes the kept state if nothing forbids it; what the deployment is told, or the error that
// makes it wait for the next attempt.
Result<launch::LaunchEvent> Rescue(store::Store& store, const store::Deployment& d,
                                   const std::string& run_id, const std::string& content) {
  auto storage = StateStorageOf(store, d.org_id, d.project_id, d.env_id);
  if (!storage) return storage.error();
  if (!std::holds_alternative<BerthStateStorage>(*storage))
    return NotRescued("the environment's state storage is " +
                      std::string(StateStorageTypeName(TypeOf(*storage))) +
                      ", which berthd does not write; push it there");
  auto kept = IdentityOf(content);
  if (!kept && content.find("\"encrypted_data\"") != std::string::npos)
    return NotRescued(
        "it is encrypted (state_encryption), so berthd cannot tell whether it is the "
        "environment's state further on");
  if (!kept)
    return NotRescued(
        "it is not a TF state (an object with a lineage, a version and a "
        "serial)");
  const std::string key = d.Environment().Key();
  auto versions = store.States().Versions(key);
  if (!versions) return versions.error();
  const int64_t newest = versions->empty() ? 0 : versions->back().version;
  if (!versions->empty()) {
    const store::StateVersion& last = versions->back();
    std::string at = "version " + std::to_string(newest);
    if (last.sha256 == crypto::Sha256Hex(content))
      return launch::LaunchEvent{.reason = "StateRescued",
                                 .message =
                                     "the state tofu could not persist is the "
                                     "environment's state already (" +
                                     at + ")",
                                 .warning = false};
    if (last.deleted) return NotRescued("the environment's state was deleted since (" + at + ")");
    auto current = store.States().Version(key, newest);
    if (!current) return current.error();
    if (auto now = IdentityOf(*current)) {
      if (now->lineage != kept->lineage)
        return NotRescued("it is of lineage " + kept->lineage + ", the environment's state (" + at +
                          ") of lineage " + now->lineage);
      if (kept->serial <= now->serial)
        return NotRescued("the environment's state moved on since (" + at + ", serial " +
                          std::to_string(now->serial) + "; the kept state has serial " +
                          std::to_string(kept->serial) + ")");
    }
  }
  auto put =
      store.States().PutOver(key, newest, content, "rescued: errored.tfstate of run " + run_id);
  if (!put) return put.error();
  std::string pushed = "version " + std::to_string(put->version);
  // The version is in; a history line that fails to be written is not worth a second push.
  IgnoreError(
      store.States().Record(
          key, {"rescue", "berthd", "errored.tfstate of run " + run_id + " pushed as " + pushed}),
      "the version itself says it was rescued");
  return launch::LaunchEvent{.reason = "StateRescued",
                             .message =
                                 "tofu could not persist the state; berthd pushed the "
                                 "state it left (errored.tfstate) as " +
                                 pushed + " of the environment's state",
                             .warning = true};
}

}  // namespace

bool KeptStates::Settle(const std::string& org, const std::string& deployment,
                        const std::string& run_id) {
  auto kept = store_.DeploymentData().GetArtifact(org, deployment, std::string(kKeptState));
  if (!kept) return kept.error().kind == ErrorKind::kNotFound;
  if (kept->run_id != run_id) return true;  // another run's
  auto settled = store_.DeploymentData().GetArtifact(org, deployment, SettledMarker(run_id));
  if (settled) return true;
  if (settled.error().kind != ErrorKind::kNotFound) return false;
  auto d = store_.Deployments().Get(org, deployment);
  if (!d) return false;
  auto told = Rescue(store_, *d, run_id, kept->content);
  if (!told) {
    log_.Warn("kept state not settled yet: tried again",
              {{"deployment", deployment}, {"run", run_id}, {"why", told.error().message}});
    return false;
  }
  RecordDeploymentEvent(store_, log_, org, deployment, run_id, *told);
  auto marked = store_.DeploymentData().PutArtifact(
      org, deployment, {.name = SettledMarker(run_id), .run_id = run_id, .content = told->message});
  return marked.has_value();
}

void KeptStates::SettlePending() {
  auto pending = store_.DeploymentData().ArtifactsAwaiting(
      std::string(kKeptState), std::string(kRunEndedMarkerPrefix), std::string(kSettledPrefix),
      kSettledPerPass);
  if (!pending) return;
  for (const store::ArtifactOwner& a : *pending) Settle(a.org, a.deployment, a.run_id);
}

}  // namespace berth::server
