// What a launcher reported, for tests: each run's ends (joined as the dispatcher joins them,
// with no posted result) and warnings, and a bounded wait for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/run_result.h"
#include "launch/launcher.h"
#include "launch/run_outcome.h"

namespace berth::launch {

class OutcomeRecorder : public RunObserver {
 public:
  // Launcher tests check how a launcher reads a runner's end; whether a result is of the
  // run's op is the join's own check (run_outcome_test), so the result written is taken as
  // the run's.
  void OnRunEnd(const std::string& run_id, const RunnerExit& exit) override {
    auto written = ParseRunResult(exit.written_result);
    RunOutcome outcome = JoinRunEnd(exit, std::nullopt, written ? written->op : "");
    MutexLock lock(mutex_);
    outcomes_[run_id].push_back(outcome);
    changed_.notify_all();
  }
  // Each event as "Reason: message".
  void OnRunEvent(const std::string& run_id, const LaunchEvent& event) override {
    MutexLock lock(mutex_);
    warnings_[run_id].push_back(event.reason + ": " + event.message);
  }
  // The run's outcome, once it is in (bounded wait); nullopt if it never came.
  std::optional<RunOutcome> WaitFor(const std::string& run_id,
                                    std::chrono::seconds timeout = std::chrono::seconds(120)) {
    MutexLock lock(mutex_);
    changed_.wait_for(mutex_, timeout,
                      [&]() REQUIRES(mutex_) { return outcomes_.contains(run_id); });
    if (!outcomes_.contains(run_id)) return std::nullopt;
    return outcomes_[run_id].front();
  }
  // The run's latest outcome (a run recovered after its end is reported again); nullopt if none.
  std::optional<RunOutcome> Last(const std::string& run_id) {
    MutexLock lock(mutex_);
    if (!outcomes_.contains(run_id)) return std::nullopt;
    return outcomes_[run_id].back();
  }
  size_t Count(const std::string& run_id) {
    MutexLock lock(mutex_);
    return outcomes_.contains(run_id) ? outcomes_[run_id].size() : 0;
  }
  std::vector<std::string> Warnings(const std::string& run_id) {
    MutexLock lock(mutex_);
    return warnings_[run_id];
  }

 private:
  Mutex mutex_;
  std::condition_variable_any changed_;
  std::map<std::string, std::vector<RunOutcome>> outcomes_ GUARDED_BY(mutex_);
  std::map<std::string, std::vector<std::string>> warnings_ GUARDED_BY(mutex_);
};

}  // namespace berth::launch
