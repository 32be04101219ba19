// How much the Kubernetes launcher asks of the API server: requests per run by verb, for a
// plan and for an apply, and the watch connections that N concurrent runs cost. Real
// apiserver, the launcher as its service account, the test node agent running real runners.
//
// Usage: kube_launcher_requests [CONCURRENT_RUNS (default 100)]   (see bench/kube_requests.sh)
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <set>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/run_result.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launch/run_outcome.h"
#include "launcher_world.h"

namespace berth::launch {
namespace {

class Ends : public RunObserver {
 public:
  // Ended well: the runner's written result says so (no berthd took a posted one here).
  void OnRunEnd(const std::string& run_id, const RunnerExit& exit) override {
    auto written = ParseRunResult(exit.written_result);
    RunOutcome outcome = JoinRunEnd(exit, std::nullopt, written ? written->op : "");
    MutexLock lock(mutex_);
    (outcome.succeeded ? succeeded_ : failed_).insert(run_id);
    changed_.notify_all();
  }
  void OnRunEvent(const std::string& /*run_id*/, const LaunchEvent& /*event*/) override {}
  // Waits until n runs ended; how many succeeded.
  size_t WaitFor(size_t n) {
    MutexLock lock(mutex_);
    changed_.wait_for(mutex_, std::chrono::minutes(20),
                      [&]() REQUIRES(mutex_) { return succeeded_.size() + failed_.size() >= n; });
    return succeeded_.size();
  }

 private:
  Mutex mutex_;
  std::condition_variable_any changed_;
  std::set<std::string> succeeded_ GUARDED_BY(mutex_), failed_ GUARDED_BY(mutex_);
};

std::map<std::string, uint64_t> Delta(const kube::RequestCounts& before,
                                      const kube::RequestCounts& after) {
  std::map<std::string, uint64_t> delta;
  for (const auto& [key, count] : after) {
    auto it = before.find(key);
    uint64_t was = it == before.end() ? 0 : it->second;
    if (count > was) delta[key] = count - was;
  }
  return delta;
}

void Print(const char* title, const std::map<std::string, uint64_t>& delta, double runs) {
  std::printf("%s\n", title);
  uint64_t writes = 0, reads = 0;
  for (const auto& [key, count] : delta) {
    std::printf("  %-22s %8.2f per run\n", key.c_str(), static_cast<double>(count) / runs);
    bool write = key.starts_with("create") || key.starts_with("delete") || key.starts_with("patch");
    (write ? writes : reads) += key.starts_with("watch") ? 0 : count;
  }
  std::printf("  writes %.2f per run, reads (get/list) %.2f per run\n",
              static_cast<double>(writes) / runs, static_cast<double>(reads) / runs);
}

int Main(int argc, char** argv) {
  int concurrent = argc > 1 ? std::stoi(argv[1]) : 100;
  auto world = LauncherWorld::Create("bench-launcher");
  if (!world) {
    std::fprintf(stderr, "%s\n", world.error().ToString().c_str());
    return 1;
  }
  Ends ends;
  KubernetesLauncher launcher((*world)->LauncherClient(), (*world)->Settings(),
                              SystemClock::Instance(), ends);
  if (auto started = launcher.Start(); !started) {
    std::fprintf(stderr, "%s\n", started.error().ToString().c_str());
    return 1;
  }
  auto& client = (*world)->LauncherClient();
  size_t launched = 0;
  for (const char* op : {"plan", "apply"}) {
    auto before = client.Counts();
    if (!launcher.Launch((*world)->Request(std::string("one-") + op, op, "hello"))) return 1;
    ends.WaitFor(++launched);
    // The cleanup happens on the next tick.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    Print((std::string("one ") + op + " run:").c_str(), Delta(before, client.Counts()), 1);
  }

  auto before = client.Counts();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < concurrent; ++i) {
    if (!launcher.Launch((*world)->Request("many-" + std::to_string(i), "plan", "hello"))) return 1;
  }
  size_t ok = ends.WaitFor(launched + static_cast<size_t>(concurrent));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Print((std::to_string(concurrent) + " concurrent plan runs:").c_str(),
        Delta(before, client.Counts()), concurrent);
  uint64_t watches = 0, lists = 0;
  for (const auto& stats : launcher.WatchStats()) {
    watches += stats.watches;
    lists += stats.lists;
  }
  std::printf("  informers %zu, watch connections opened %llu, lists %llu (whole session)\n",
              launcher.WatchStats().size(), static_cast<unsigned long long>(watches),
              static_cast<unsigned long long>(lists));
  std::printf("  %zu of %d succeeded in %.1f s\n", ok - 2, concurrent, seconds);
  return 0;
}

}  // namespace
}  // namespace berth::launch

int main(int argc, char** argv) { return berth::launch::Main(argc, argv); }
