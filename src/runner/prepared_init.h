// An earlier run's init, continued (`runner run --prepared`): the .terraform folder and lock
// file the plan run's init left where TF runs are kept while the module is laid out afresh
// around them, so that the approved apply starts no init. Nothing in them is trusted: tofu
// checks every provider against the lock file, and the lock file against the one recorded in
// the plan file, whose bytes the runner checks against the approved digest.
#pragma once

#include <filesystem>

namespace berth::runner {

class PreparedInit {
 public:
  // Moves the init found in `workdir` (inside `root`) aside and empties the rest of root for
  // the module. Holds nothing when workdir has no .terraform folder of its own, or one with
  // remote modules (files no lock file checks): the run inits.
  static PreparedInit Stash(const std::filesystem::path& root,
                            const std::filesystem::path& workdir);

  // Puts it back where TF runs in the module laid out afresh. False when there was none or it
  // cannot go back (the module has a .terraform of its own): the run inits.
  bool Restore(const std::filesystem::path& workdir);

 private:
  std::filesystem::path stash_;  // empty: nothing held
};

}  // namespace berth::runner
