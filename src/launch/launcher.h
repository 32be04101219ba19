// The Launcher: how a runner is started for one run, whatever it runs on (a Kubernetes Pod or
// Job, a local process, an agent). Every launcher hands the runner the same things and reports
// the same outcome; the dispatcher does not know which one it talks to.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/runner_invocation.h"

namespace berth::launch {

struct LaunchRequest {
  std::string run_id;           // a DNS label, unique per run: launching it twice starts one runner
  std::string revision;         // of the environment's configuration, for labels
  std::string runner_id;        // the runner (of the org) whose configuration this is
  RunnerInvocation invocation;  // the run; the launcher adds its placement
  std::map<std::string, std::string> labels;  // the run's labels (reserved ones override)
  std::string token;                          // the run's token; never in a spec or a log
  nlohmann::json runner_configuration;        // the runner's own configuration
};

// Why a runner ended other than by finishing its run (the result document's kinds cover a run
// that finished). Each names what a user should look at.
inline constexpr std::string_view kRunnerConnectionFailed = "RunnerConnectionFailed";
inline constexpr std::string_view kRunnerQuotaExhausted = "RunnerQuotaExhausted";
inline constexpr std::string_view kRunnerOomKilled = "OOMKilled";
inline constexpr std::string_view kRunnerEvicted = "Evicted";
inline constexpr std::string_view kRunnerDeadlineExceeded = "DeadlineExceeded";
inline constexpr std::string_view kRunnerImagePullFailed = "ImagePullBackOff";
inline constexpr std::string_view kRunnerConfigError = "CreateContainerConfigError";
inline constexpr std::string_view kRunnerUnschedulable = "Unschedulable";
inline constexpr std::string_view kRunnerLost = "RunnerLost";
inline constexpr std::string_view kRunnerCancelled = "Cancelled";
inline constexpr std::string_view kRunnerFailed = "RunnerFailed";  // exited without a result

struct RunOutcome {
  bool succeeded = false;
  int exit_code = -1;                    // -1: the runner never exited (or nobody saw it)
  std::optional<nlohmann::json> result;  // the runner's result document, when it wrote one
  std::string error_kind;                // empty on success; the result's kind or one of the above
  std::string message;
  // The image the runner's container ran, as its node resolved it (a digest); empty when the
  // launcher does not know (a local process).
  std::string image_id;
};

// Something a user should know about a run that goes on: an override that was ignored, a full
// quota the launcher is waiting out. It reaches the deployment as an event and a log line.
struct LaunchEvent {
  std::string reason;  // a CamelCase word, as Kubernetes Events have
  std::string message;
  bool warning = true;
};
inline constexpr std::string_view kImageOverrideIgnored = "ImageOverrideIgnored";
inline constexpr std::string_view kUntrackedRunnerStopped = "UntrackedRunnerStopped";

class Launcher {
 public:
  // Called once per run when its runner has ended, from a launcher thread.
  using OnEnd = std::function<void(const std::string& run_id, const RunOutcome& outcome)>;
  using OnEvent = std::function<void(const std::string& run_id, const LaunchEvent& event)>;

  virtual ~Launcher() = default;
  // Starts the run's runner, or adopts the one that already exists for run_id.
  virtual Result<void> Launch(const LaunchRequest& request) = 0;
  // Stops the run's runner: gracefully once it has started (a running apply gets to stop
  // cleanly), at once before that.
  virtual Result<void> Cancel(const std::string& run_id) = 0;
  // After a restart: runs the caller still tracks are adopted, never started again (a runner
  // that is gone ends as RunnerLost); runners of runs it does not know are removed.
  virtual Result<void> Recover(const std::vector<LaunchRequest>& known) = 0;
  // The URL its runners reach berthd at (gateway and state backend) when it is not the one the
  // dispatcher was given: a Pod may need a Service name where a local process uses loopback.
  virtual std::optional<std::string> BerthdUrlForRunners() const { return std::nullopt; }
};

}  // namespace berth::launch
