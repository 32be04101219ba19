// Room in a runner's shared provider cache (provider_harvest.h): which environment used which
// package, and when (a file per package and environment in CACHE.uses/, beside the cache and
// out of the runs' sight), and what goes when a harvest takes the cache over its size. A
// package another environment used within protected_for is never removed to make room for a
// run's; when the rest is not enough, the run's own new packages go instead. So a run that
// fetches heaps of junk cannot push out what other environments pin.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace berth::launch {

struct CacheRoom {
  uint64_t max_bytes = uint64_t{16} << 30;
  std::chrono::seconds protected_for = std::chrono::hours(7 * 24);
};

// Records that environment ("PROJECT/ENV") used package, a package folder of shared, now.
void RecordUse(const std::filesystem::path& shared, const std::filesystem::path& package,
               const std::string& environment);

// While shared holds more than room.max_bytes: removes the packages used longest ago that no
// environment but this one used within room.protected_for, then, if that is not enough, those
// of just_taken (the harvest's own). Returns the ones of just_taken it removed.
std::vector<std::filesystem::path> MakeRoom(const std::filesystem::path& shared,
                                            const std::vector<std::filesystem::path>& just_taken,
                                            const std::string& environment, const CacheRoom& room);

}  // namespace berth::launch
