// The gRPC service of `runner serve` (src/rpc/runner_service.proto): takes one run at a time
// from berth-controller, runs `runner run` on it as a child process, and streams back its log,
// artifacts and result.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "rpc/runner_service.grpc.pb.h"
#include "runner/options.h"

namespace berth::runner {

// The flags of `runner run` that serve sets itself (the files it was sent, where results go) or
// that need berthd's gateway, which a controller's run has not: a Start naming one is refused.
const std::vector<std::string_view>& ServeOwnedRunFlags();

// Refuses args that name a serve-owned flag, else parses them as `runner run` would: the error
// names the flag and the rule. On success returns the run's op.
Result<std::string> CheckServedRunArgs(const std::vector<std::string>& args);

class RunService final : public berth::runner::v1::Runner::Service {
 public:
  RunService(ServeOptions options, std::filesystem::path runner_path);

  grpc::Status Run(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<v1::RunEvent, v1::RunRequest>* stream) override;

  // Interrupts the run in progress (as SIGTERM would) and refuses new ones: serve is stopping.
  void Stop();

 private:
  const ServeOptions options_;
  const std::filesystem::path runner_path_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopping_{false};
  Mutex mutex_;
  pid_t running_pid_ GUARDED_BY(mutex_) = -1;
};

}  // namespace berth::runner
