// berthd's side of a runner's shared provider cache (runner/shared_providers.h is the run's):
// when a sandboxed run ends, the provider packages it fetched itself (the real folders in its
// plugin cache; what it borrowed are links) are copied into its runner's shared cache, each
// under tofu's "h1:" hash of the bytes berthd wrote, read-only. Only a run whose lock file
// lists that hash is ever lent the package, so a package a hostile run made serves no other
// module. Everything in the run's cache is the run's: folders are opened one by one, never
// through a link; only regular files are read (a FIFO or device is passed over); what is
// taken is bounded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "core/mutex.h"

namespace berth::launch {

struct HarvestLimits {
  int packages = 32;                           // taken from one run
  int files = 10000;                           // in one package
  uint64_t package_bytes = uint64_t{4} << 30;  // one package's files together
  // All that one harvest reads (each package is read to hash it, and again to copy it): what a
  // run can make berthd read or write for it.
  uint64_t run_bytes = uint64_t{8} << 30;
  // The shared cache's own size: beyond it, the packages used longest ago go, but never one
  // another environment used within protected_for (shared_cache_room.h).
  uint64_t cache_bytes = uint64_t{16} << 30;
  std::chrono::seconds protected_for = std::chrono::hours(7 * 24);
};

struct HarvestCounts {
  int taken = 0;    // copied into the shared cache
  int known = 0;    // the shared cache had them already
  int refused = 0;  // beyond a limit, or unreadable
};

// environment ("PROJECT/ENV", the run's) is recorded as a user of each package the run fetched
// or borrowed.
HarvestCounts HarvestProviders(const std::filesystem::path& run_cache,
                               const std::filesystem::path& shared, const std::string& environment,
                               const HarvestLimits& limits = {});

// Harvests one run at a time on a thread of its own, so that hashing and copying a large
// package holds up no other run's start, end or limits. What is still queued when it stops is
// dropped: the runner's next run fetches those packages again.
class ProviderHarvester {
 public:
  // done hears what each harvest took (for berthd's metrics); it may be empty.
  ProviderHarvester(HarvestLimits limits, std::function<void(const HarvestCounts&)> done);
  ~ProviderHarvester();  // a harvest under way ends first
  ProviderHarvester(const ProviderHarvester&) = delete;
  ProviderHarvester& operator=(const ProviderHarvester&) = delete;

  void Enqueue(std::filesystem::path run_cache, std::filesystem::path shared,
               std::string environment) EXCLUDES(mutex_);

 private:
  void Loop() EXCLUDES(mutex_);

  const HarvestLimits limits_;
  const std::function<void(const HarvestCounts&)> done_;
  Mutex mutex_;
  std::condition_variable_any wake_;
  struct Harvest {
    std::filesystem::path run_cache, shared;
    std::string environment;
  };
  std::deque<Harvest> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace berth::launch
