// The work folder of a run: the module laid out where TF may write, the clean environment TF
// runs in, and the values the log must never show.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/masker.h"
#include "runner/options.h"

namespace berth::runner {

struct WorkDir {
  std::filesystem::path root;     // where the module is laid out
  std::filesystem::path workdir;  // root/<path>: where TF runs
  bool initialised = false;       // an earlier run's init is there (--prepared): none runs
};

// Where the module is laid out: --workdir, else /tmp/<namespace>-<name>.
std::filesystem::path WorkRoot(const RunOptions& options);

// Copies a module folder (or extracts a module archive) into the run's root; with --prepared,
// around the init an earlier run left there (prepared_init.h).
Result<WorkDir> PrepareWorkDir(const RunOptions& options);

// The environment TF runs in: the caller's, less the TF_* variables that are berth's own
// (core/tf_variables.h; each dropped one is told to dropped, why in words), plus berth's own
// settings. TF's CLI configuration: --cli-config, else --providers' mirror, else the caller's
// TF_CLI_CONFIG_FILE, else the image's mirror (BERTH_PROVIDERS).
std::vector<std::string> TfEnvironment(const std::vector<std::string>& caller,
                                       const RunOptions& options, const WorkDir& dir,
                                       const std::function<void(const std::string&)>& dropped);

// Values of variables the module declares sensitive (as given in the --config tfvars JSON)
// and every line of the file named by BERTH_MASK_FILE.
Result<void> LoadSecrets(const RunOptions& options, const WorkDir& dir,
                         const std::vector<std::string>& caller, Masker& masker);

// The run's home folder: the caller's HOME, else the run's root.
std::filesystem::path HomeFolder(const std::vector<std::string>& caller, const WorkDir& dir);

// The value of NAME in a NAME=VALUE list, or empty.
std::string Lookup(const std::vector<std::string>& env, std::string_view name);

}  // namespace berth::runner
