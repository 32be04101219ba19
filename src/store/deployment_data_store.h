// What a deployment's runs upload and read, kept with the deployment: the module bundle it was
// asked to run, its log (chunks numbered by the runner, so that a retried chunk is stored
// once), and its artifacts (plan file, outputs, a rescued state). Binary content is kept as
// base64 text so that SQLite and PostgreSQL store it alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::store {

struct Bundle {
  std::string org_id, id, sha256;
  std::string content;  // the tar.gz bytes
  int64_t created_at = 0;
};

struct LogChunk {
  int64_t position = 0;  // the chunk's place in its deployment's log (1, 2, ...)
  std::string run_id;
  int64_t seq = 0;  // the runner's number for it
  std::string data;
  int64_t at = 0;
};

// Something a launcher said about one of the deployment's runs, as Kubernetes Events are kept:
// a type, a reason, a message, and how often and when it was said.
struct DeploymentEvent {
  int64_t position = 0;  // 1, 2, ... in the deployment
  std::string run_id;
  std::string type;    // Normal | Warning
  std::string reason;  // "RunnerQuotaExhausted", "ImageOverrideIgnored", ...
  std::string message;
  int64_t count = 1;
  int64_t first_at = 0, last_at = 0;
};

// Which run of which deployment an artifact came from.
struct ArtifactOwner {
  std::string org, deployment, run_id;
};

struct Artifact {
  std::string name, run_id, sha256;
  std::string content;
  int64_t at = 0;
};

// How old a bundle must be for its upload again to make it young: an unused bundle is kept at
// least the retention's window minus this from its last upload (server/retention.h keeps them
// an hour).
inline constexpr std::chrono::milliseconds kBundleRefreshAfter = std::chrono::minutes(5);

class DeploymentDataStore {
 public:
  virtual ~DeploymentDataStore() = default;
  // Bundles are named by their content: storing the same bytes twice gives the same bundle,
  // young again (a pruning spares it) unless it was stored within kBundleRefreshAfter.
  virtual Result<Bundle> PutBundle(const std::string& org, const std::string& content) = 0;
  virtual Result<Bundle> GetBundle(const std::string& org, const std::string& id) = 0;
  // Removes the bundles stored before `before` (milliseconds since the epoch) that no
  // deployment runs (nor may run: one not ended from before bundles were recorded); how many.
  virtual Result<int64_t> PruneBundles(int64_t before) = 0;
  // Appends chunk seq of a run to its deployment's log; false when the run had sent that seq
  // already (a retry), which is not stored again.
  virtual Result<bool> AppendLog(const std::string& org, const std::string& deployment,
                                 const std::string& run_id, int64_t seq,
                                 const std::string& data) = 0;
  // The chunks after position `after`, oldest first, at most limit.
  virtual Result<std::vector<LogChunk>> ReadLog(const std::string& org,
                                                const std::string& deployment, int64_t after,
                                                int limit) = 0;
  // Records an event; the same run, reason and message as the deployment's last event counts
  // that one up. Returns the event as stored.
  virtual Result<DeploymentEvent> AppendEvent(const std::string& org, const std::string& deployment,
                                              const DeploymentEvent& event) = 0;
  virtual Result<std::vector<DeploymentEvent>> Events(const std::string& org,
                                                      const std::string& deployment) = 0;
  // Stores (or replaces: a retried upload) the deployment's artifact of that name.
  virtual Result<void> PutArtifact(const std::string& org, const std::string& deployment,
                                   const Artifact& artifact) = 0;
  virtual Result<Artifact> GetArtifact(const std::string& org, const std::string& deployment,
                                       const std::string& name) = 0;  // kNotFound
  // The artifacts named `name` whose run also has one named with_prefix + its run id and none
  // named without_prefix + its run id (what ended runs left for berthd to settle), oldest
  // first, at most limit.
  virtual Result<std::vector<ArtifactOwner>> ArtifactsAwaiting(const std::string& name,
                                                               const std::string& with_prefix,
                                                               const std::string& without_prefix,
                                                               int limit) = 0;
};

}  // namespace berth::store
