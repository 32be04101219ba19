#include "launch/local/run_users.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kHighestRunUid = 65534;  // 65535 is (uid_t)-1 to some 16-bit interfaces

Error SystemError(const std::string& doing, int error_number) {
  return MakeError(ErrorKind::kInternal, doing + ": " + std::strerror(error_number));
}

// The locks' folder, made if missing; refused when another user could plant or remove a lock.
Result<sys::Fd> OpenLockFolder(const fs::path& locks) {
  std::error_code ec;
  fs::create_directories(locks, ec);
  if (ec) return SystemError("making " + locks.string(), ec.value());
  sys::Fd folder(::open(locks.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!folder) return SystemError("opening " + locks.string(), errno);
  struct stat st {};
  if (::fstat(folder.Get(), &st) != 0) return SystemError("reading " + locks.string(), errno);
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     locks.string() + " holds which berthd has which run users: it must be " +
                         "berthd's own and written by no one else");
  return folder;
}

// uid locked for us, or why it cannot be a run user (a user of the machine, another berthd's).
struct Attempt {
  sys::Fd lock;
  std::string refusal;
};

Result<Attempt> TryToHold(int folder, uid_t uid, int count) {
  const std::string name = std::to_string(uid);
  // A user the machine has would share its process count (and its files) with the runs.
  if (const passwd* user = ::getpwuid(uid))
    return Attempt{.refusal = "--local-runner-uid: uid " + name + " is the user " + user->pw_name +
                              "'s; local runs need " + std::to_string(count) +
                              " uids (one per parallel run) that nobody on this machine has"};
  sys::Fd lock(::openat(folder, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return SystemError("opening the run user lock " + name, errno);
  if (::flock(lock.Get(), LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    ssize_t n = ::pread(lock.Get(), holder, sizeof holder - 1, 0);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return Attempt{.refusal = "--local-runner-uid: uid " + name +
                              " is a run user of another berthd on this machine (pid " + pid +
                              "); give each berthd a range of its own"};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock.Get(), 0) != 0 || ::pwrite(lock.Get(), pid.data(), pid.size(), 0) < 0)
    return SystemError("writing the run user lock " + name, errno);
  return Attempt{.lock = std::move(lock)};
}

}  // namespace

Result<std::shared_ptr<const RunUserClaim>> RunUserClaim::Take(const RunUserRange& range,
                                                               const fs::path& locks) {
  // A root berthd with no user to drop runs to would run them as root.
  if (range.count < 1)
    return MakeError(ErrorKind::kInvalidArgument,
                     "--max-parallel-runs: a root berthd needs at least one user for local runs");
  auto folder = OpenLockFolder(locks);
  if (!folder) return folder.error();
  const auto count = static_cast<uid_t>(range.count);
  for (uid_t start = range.first;;) {
    if (start == 0 || start > kHighestRunUid || count - 1 > kHighestRunUid - start)
      return MakeError(ErrorKind::kInvalidArgument,
                       "--local-runner-uid: the users of local runs (" + std::to_string(start) +
                           " and the " + std::to_string(count - 1) +
                           " after it, one per parallel run) must lie between 1 and " +
                           std::to_string(kHighestRunUid));
    std::vector<uid_t> uids;
    std::vector<sys::Fd> held;
    std::string refusal;
    for (uid_t uid = start; uid < start + count && refusal.empty(); ++uid) {
      auto attempt = TryToHold(folder->Get(), uid, range.count);
      if (!attempt) return attempt.error();
      refusal = attempt->refusal;
      if (!refusal.empty()) {
        if (range.exact) return MakeError(ErrorKind::kInvalidArgument, refusal);
        start = uid + 1;  // every range holding uid is out: look past it
      } else {
        uids.push_back(uid);
        held.push_back(std::move(attempt->lock));
      }
    }
    if (refusal.empty())
      return std::shared_ptr<const RunUserClaim>(
          new RunUserClaim(std::move(uids), std::move(held)));
  }
}

}  // namespace berth::launch
