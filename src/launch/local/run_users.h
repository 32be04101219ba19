// The users a root berthd's local runs drop to, one per concurrent run, held for as long as
// berthd lives: a lock file per uid (flock, so a crash lets go) in a folder only root writes.
// Two berthds on one machine never share a run user: they would share its process count, the
// files it owns and its firewall rules (run_firewall.h).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.h"
#include "sys/fd.h"

namespace berth::launch {

// Where the locks are: tmpfs, emptied at boot, when no berthd can hold one.
inline constexpr const char* kRunUserLocks = "/run/berth/run-users";

struct RunUserRange {
  uid_t first = 60100;
  int count = 4;
  // The operator named first (--local-runner-uid): exactly first .. first + count - 1, or
  // refused naming the uid that cannot be had. Otherwise the first count consecutive uids from
  // first that nobody on the machine has and no other berthd holds.
  bool exact = false;
  // The first of the users this berthd held before (its data folder keeps it): tried first,
  // since runs it left may still be going as them; when it cannot be had, the search above.
  std::optional<uid_t> preferred;
};

class RunUserClaim {
 public:
  static Result<std::shared_ptr<const RunUserClaim>> Take(
      const RunUserRange& range, const std::filesystem::path& locks = kRunUserLocks);
  const std::vector<uid_t>& Uids() const { return uids_; }

 private:
  RunUserClaim(std::vector<uid_t> uids, std::vector<sys::Fd> locks)
      : uids_(std::move(uids)), locks_(std::move(locks)) {}
  std::vector<uid_t> uids_;
  std::vector<sys::Fd> locks_;
};

}  // namespace berth::launch
