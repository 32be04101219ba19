#include "launch/local/run_users.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
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

// The users that own a process now: a run a berthd left when it stopped runs on as its user.
std::set<uid_t> UsersWithProcesses() {
  std::set<uid_t> users;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0) users.insert(st.st_uid);
  }
  return users;
}

// The uids first .. first + count - 1, held; or why one of them cannot be (and which).
struct RangeAttempt {
  std::vector<uid_t> uids;
  std::vector<sys::Fd> held;
  std::string refusal;
  uid_t refused_uid = 0;
};

Result<RangeAttempt> TryRange(int folder, uid_t first, int count, const std::set<uid_t>& busy) {
  RangeAttempt range;
  for (uid_t uid = first; uid < first + static_cast<uid_t>(count); ++uid) {
    if (busy.contains(uid)) {
      range.refusal = "uid " + std::to_string(uid) + " runs processes (a run of a berthd gone?)";
      range.refused_uid = uid;
      return range;
    }
    auto attempt = TryToHold(folder, uid, count);
    if (!attempt) return attempt.error();
    if (!attempt->refusal.empty()) {
      range.refusal = attempt->refusal;
      range.refused_uid = uid;
      return range;
    }
    range.uids.push_back(uid);
    range.held.push_back(std::move(attempt->lock));
  }
  return range;
}

Error OutOfRange(uid_t start, uid_t count) {
  return MakeError(ErrorKind::kInvalidArgument,
                   "--local-runner-uid: the users of local runs (" + std::to_string(start) +
                       " and the " + std::to_string(count - 1) +
                       " after it, one per parallel run) must lie between 1 and " +
                       std::to_string(kHighestRunUid));
}

bool InRange(uid_t start, uid_t count) {
  return start != 0 && start <= kHighestRunUid && count - 1 <= kHighestRunUid - start;
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
  auto claim = [](RangeAttempt& held) {
    return std::shared_ptr<const RunUserClaim>(
        new RunUserClaim(std::move(held.uids), std::move(held.held)));
  };
  if (range.exact) {
    if (!InRange(range.first, count)) return OutOfRange(range.first, count);
    auto held = TryRange(folder->Get(), range.first, range.count, {});
    if (!held) return held.error();
    if (!held->refusal.empty()) return MakeError(ErrorKind::kInvalidArgument, held->refusal);
    return claim(*held);
  }
  // The users this berthd had before, whose runs may still be going: its own again.
  if (range.preferred && InRange(*range.preferred, count)) {
    auto held = TryRange(folder->Get(), *range.preferred, range.count, {});
    if (!held) return held.error();
    if (held->refusal.empty()) return claim(*held);
  }
  // Otherwise the first free range, passing over users that still run a gone berthd's runs.
  const std::set<uid_t> busy = UsersWithProcesses();
  for (uid_t start = range.first;;) {
    if (!InRange(start, count)) return OutOfRange(start, count);
    auto held = TryRange(folder->Get(), start, range.count, busy);
    if (!held) return held.error();
    if (held->refusal.empty()) return claim(*held);
    start = held->refused_uid + 1;  // every range holding it is out: look past it
  }
}

}  // namespace berth::launch
