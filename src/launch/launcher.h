// The Launcher: how a runner is started for one run, whatever it runs on (a Kubernetes Pod or
// Job, a local process, an agent). Every launcher hands the runner the same things and reports
// the same outcome; the dispatcher does not know which one it talks to.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/run_result.h"
#include "core/runner_invocation.h"
#include "launch/runner_settings.h"

namespace berth::launch {

struct LaunchRequest {
  std::string run_id;           // a DNS label, unique per run: launching it twice starts one runner
  std::string revision;         // of the environment's configuration, for labels
  std::string org_id;           // the organization of the run's environment
  std::string environment;      // PROJECT/ENV: the run's environment, in org_id
  std::string runner_id;        // the runner (of the org) whose configuration this is
  RunnerInvocation invocation;  // the run; the launcher adds its placement
  std::map<std::string, std::string> labels;  // the run's labels (reserved ones override)
  std::string token;                          // the run's token; never in a spec or a log
  RunnerSettings runner;                      // the runner's own configuration, parsed
  // The plan run of the approved plan this run applies: a launcher that kept that run's work
  // folder continues in it (no second init); one that did not, or cannot, starts afresh.
  std::string plan_run_id;
  // This apply was handed to the plan run's runner, kept for it (ContinuesIn said it could be):
  // it runs there, never in a runner of its own.
  bool continues_plan_runner = false;
  // A plan run whose apply waits for approval: a launcher may keep its runner for the apply.
  bool approval_follows = false;
};

// Why a runner ended other than by finishing its run (the result document's kinds cover a run
// that finished). Each names what a user should look at.
enum class RunnerEnd {
  kConnectionFailed,  // its Pod never ran within the startup grace period
  kQuotaExhausted,    // a ResourceQuota refused its Pod until the grace period ran out
  kOomKilled,
  kEvicted,
  kDeadlineExceeded,  // its Pod's activeDeadlineSeconds
  kImagePullFailed,
  kConfigError,  // the kubelet could not create its container
  kUnschedulable,
  kLost,              // nobody knows how it ended: its Pod or process vanished
  kCancelled,         // stopped before it wrote a result
  kFailed,            // exited without a (valid) result
  kLimitExceeded,     // stopped for going over its runner's limits (CPU time, disk)
  kAgentUnavailable,  // no agent of its kubernetes-agent runner took the launch in time
  kAgentRejected,     // the runner's agent could not launch it, and said why
};
std::string_view RunnerEndName(RunnerEnd end);
std::optional<RunnerEnd> RunnerEndNamed(std::string_view name);

struct RunOutcome {
  bool succeeded = false;
  int exit_code = -1;               // -1: the runner never exited (or nobody saw it)
  std::optional<RunResult> result;  // the runner's result document, when it wrote a valid one
  // Why it failed (monostate on success): the result's error kind, or how the runner ended
  // without finishing its run.
  std::variant<std::monostate, RunErrorKind, RunnerEnd> failure;
  std::string message;
  // The image the runner's container ran, as its node resolved it (a digest); empty when the
  // launcher does not know (a local process).
  std::string image_id;

  // The failure's name ("Apply", "RunnerLost"); empty on success.
  std::string_view FailureName() const;
  bool EndedAs(RunnerEnd end) const { return failure == decltype(failure)(end); }
  // Stopped on request: by the launcher, or the runner's own result says so.
  bool Cancelled() const {
    return EndedAs(RunnerEnd::kCancelled) || failure == decltype(failure)(RunErrorKind::kCancelled);
  }
};

// How a runner ended, as its launcher saw it: never whether its run succeeded. The run-end
// join (run_outcome.h) decides that, once, from this and the result the runner posted.
struct RunnerExit {
  std::optional<int> exit_code;  // nullopt: nobody saw it exit (re-attached, vanished)
  // Why it ended other than by finishing its run, when the launcher knows (OOMKilled, evicted,
  // never started, ...). kLost and kFailed say the launcher does not know how the run went: a
  // valid result the runner posted still decides.
  std::optional<RunnerEnd> ended_as;
  std::string message;  // ended_as in words; otherwise a note for a run that left no result
  // What the runner left where its launcher reads (its result file, its termination message):
  // the result when it posted none. Unparsed: the join reads it with the bounded parser.
  std::string written_result;
  bool stop_requested = false;  // the launcher was asked to stop it
  // The image its container ran, as its node resolved it (a digest); empty: a local process.
  std::string image_id;
};

// A runner the launcher saw end other than by finishing its run: how, and why in words.
RunnerExit RunnerStopped(RunnerEnd end, std::string message);

// Something a user should know about a run that goes on: an override that was ignored, a full
// quota the launcher is waiting out. It reaches the deployment as an event and a log line.
struct LaunchEvent {
  std::string reason;  // a CamelCase word, as Kubernetes Events have
  std::string message;
  bool warning = true;
};
inline constexpr std::string_view kImageOverrideIgnored = "ImageOverrideIgnored";
inline constexpr std::string_view kUntrackedRunnerStopped = "UntrackedRunnerStopped";
inline constexpr std::string_view kLimitExceeded = "LimitExceeded";
inline constexpr std::string_view kRelayLost = "BerthdRelayLost";
inline constexpr std::string_view kNetworkAllowanceLost = "NetworkAllowanceLost";
inline constexpr std::string_view kResultFileRefused = "ResultFileRefused";

// Who hears what a launcher says about its runs (the dispatcher), from a launcher thread: how
// each run's runner ended, once, and the events before it.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnRunEnd(const std::string& run_id, const RunnerExit& exit) = 0;
  virtual void OnRunEvent(const std::string& run_id, const LaunchEvent& event) = 0;
};

// Whether a run is still tracked: its deployment holds its environment.
using RunIsHeld = std::function<bool(const std::string& run_id)>;

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Starts the run's runner, or adopts the one that already exists for run_id.
  virtual Result<void> Launch(const LaunchRequest& request) = 0;
  // Stops the run's runner: gracefully once it has started (a running apply gets to stop
  // cleanly), at once before that.
  virtual Result<void> Cancel(const std::string& run_id) = 0;
  // After a restart, or when a replica takes over another's runs: the runs in adopt are
  // adopted, never started again once their runner was started (a runner that is gone ends as
  // RunnerLost); the runners of other runs the launcher finds are removed unless held says
  // that some berthd still tracks them. held is asked after the launcher has looked, so a run
  // another replica launches meanwhile is never taken for an orphan.
  virtual Result<void> Recover(const std::vector<LaunchRequest>& adopt, const RunIsHeld& held) = 0;
  // Whether any berthd can watch its runs, not only the one that launched them: a cluster's
  // Pods can be; a process on the machine of a berthd that died cannot.
  virtual bool SharedAcrossReplicas() const = 0;
  // Removes what ended runs left on this machine beyond the newest keep of them (their log,
  // result and state are in berthd's database), never a run that held says some berthd still
  // tracks. A launcher whose runs leave nothing behind (reaped Pods) has nothing to do.
  virtual void PruneEnded(const RunIsHeld& held, size_t keep) {
    (void)held;
    (void)keep;
  }
  // Whether the run's runner goes on after its result, kept for the apply (its run ends when
  // its result is posted; the dispatcher then calls Release).
  virtual bool KeptAfterResult(const std::string& run_id) const {
    (void)run_id;
    return false;
  }
  // The run ended by its posted result: its runner is no longer the run's, only kept for the
  // apply, and goes when it ends.
  virtual void Release(const std::string& run_id) { (void)run_id; }
  // Whether the apply of plan_run_id's plan can continue in that run's kept runner now.
  virtual bool ContinuesIn(const std::string& plan_run_id) const {
    (void)plan_run_id;
    return false;
  }
  // The URL the runners of a runner so configured reach berthd at (gateway and state backend)
  // when it is not the one the dispatcher was given: a Pod may need a Service name where a
  // local process uses loopback, and a Pod in another cluster berthd's public URL.
  virtual std::optional<std::string> BerthdUrlForRunners(const RunnerSettings& runner) const {
    (void)runner;
    return std::nullopt;
  }
};

}  // namespace berth::launch
