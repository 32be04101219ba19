// Providers a run borrows from its runner's shared cache. A local launcher that sandboxes its
// runs names the runner's cache (BERTH_SHARED_PROVIDERS, read-only in the sandbox) and gives
// the run a plugin cache of its own (TF_PLUGIN_CACHE_DIR): before init, each provider the
// module's lock file pins is linked into the run's cache from the shared package whose hash
// the lock file lists, so that tofu's init uses it instead of fetching and unpacking the
// package again. tofu checks each linked package against the lock file once more; berthd takes
// the packages a run had to fetch into the shared cache when the run ends (provider_harvest.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace berth::runner {

// Links into plugin_cache, from shared, the packages lock_file's providers pin; returns
// "ADDRESS VERSION" of each linked. A provider already in plugin_cache is left as it is.
std::vector<std::string> LendSharedProviders(const std::filesystem::path& shared,
                                             const std::filesystem::path& lock_file,
                                             const std::filesystem::path& plugin_cache);

}  // namespace berth::runner
