#include "server/replica.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>

#include "core/time_format.h"
#include "crypto/random.h"
#include "sys/files.h"

namespace berth::server {
namespace fs = std::filesystem;

namespace {

std::string HostName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown";
  return name.data();
}

// A new id: the host (for people reading it, cut short) and a random part (unique).
std::string NewReplicaId(const std::string& host) {
  std::string readable;
  for (char c : host.substr(0, 40)) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    readable += plain ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '-';
  }
  return (readable.empty() ? "berthd" : readable) + "-" + crypto::RandomId(8);
}

}  // namespace

Result<ReplicaIdentity> ClaimReplicaIdentity(const fs::path& data_dir) {
  fs::path lock_path = data_dir / "replica.lock";
  sys::Fd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock)
    return MakeError(ErrorKind::kFailedPrecondition, "cannot open the data folder's lock",
                     lock_path);
  if (flock(lock.Get(), LOCK_EX | LOCK_NB) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "another berthd runs on this data folder (--data-dir): each berthd needs a "
                     "folder of its own, even when they share a database",
                     data_dir);
  ReplicaIdentity identity{.host = HostName(), .folder_lock = std::move(lock)};
  fs::path id_path = data_dir / "replica-id";
  if (auto kept = sys::ReadFile(id_path); kept && !kept->empty()) {
    identity.id = kept->substr(0, kept->find('\n'));
    return identity;
  }
  identity.id = NewReplicaId(identity.host);
  if (auto written = sys::WriteFileAtomic(id_path, identity.id + "\n"); !written)
    return written.error();
  return identity;
}

ReplicaLeaseKeeper::ReplicaLeaseKeeper(store::ReplicaStore& replicas, store::ReplicaLease lease,
                                       std::chrono::milliseconds length, sys::Logger& log)
    : replicas_(replicas), lease_(std::move(lease)), length_(length), log_(log) {}

Result<std::unique_ptr<ReplicaLeaseKeeper>> ReplicaLeaseKeeper::Start(
    store::ReplicaStore& replicas, const ReplicaIdentity& identity, std::chrono::milliseconds lease,
    sys::Logger& log) {
  std::unique_ptr<ReplicaLeaseKeeper> keeper(new ReplicaLeaseKeeper(
      replicas, {.id = identity.id, .host = identity.host, .started_at = UnixMillisNow()}, lease,
      log));
  if (auto renewed = keeper->Renew(); !renewed) return renewed.error();
  keeper->thread_ = std::thread([raw = keeper.get()] { raw->Loop(); });
  return keeper;
}

ReplicaLeaseKeeper::~ReplicaLeaseKeeper() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<void> ReplicaLeaseKeeper::Renew() {
  lease_.lease_until = UnixMillisNow() + length_.count();
  return replicas_.Renew(lease_);
}

void ReplicaLeaseKeeper::Loop() {
  MutexLock lock(mutex_);
  while (!wake_.wait_for(mutex_, length_ / 3, [&]() REQUIRES(mutex_) { return stopping_; })) {
    mutex_.unlock();
    auto renewed = Renew();
    if (!renewed)
      log_.Error(
          "replica lease not renewed: other replicas take this one's runs over once it "
          "ends",
          {{"replica", lease_.id}, {"why", renewed.error().message}});
    mutex_.lock();
  }
}

}  // namespace berth::server
