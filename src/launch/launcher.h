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

namespace berth::launch {

struct LaunchRequest {
  std::string run_id;    // a DNS label, unique per run: launching it twice starts one runner
  std::string op;        // plan, apply, destroy, ...
  std::string revision;  // of the environment's configuration, for labels
  std::vector<std::string> runner_args;       // more `runner run` flags
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
};

class Launcher {
 public:
  // Called once per run when its runner has ended, from a launcher thread.
  using OnEnd = std::function<void(const std::string& run_id, const RunOutcome& outcome)>;
  // Something a user should know about a run that goes on (an ignored override, a full quota).
  using OnWarning = std::function<void(const std::string& run_id, const std::string& warning)>;

  virtual ~Launcher() = default;
  // Starts the run's runner, or adopts the one that already exists for run_id.
  virtual Result<void> Launch(const LaunchRequest& request) = 0;
  // Stops the run's runner: gracefully once it has started (a running apply gets to stop
  // cleanly), at once before that.
  virtual Result<void> Cancel(const std::string& run_id) = 0;
  // After a restart: runs the caller still tracks are adopted, never started again (a runner
  // that is gone ends as RunnerLost); runners of runs it does not know are removed.
  virtual Result<void> Recover(const std::vector<LaunchRequest>& known) = 0;
};

}  // namespace berth::launch
