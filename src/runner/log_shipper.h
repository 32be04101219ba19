// Ships the run's log lines to the gateway in numbered chunks from a background thread: a
// chunk goes out every flush interval or when it is full, and is retried with its number until
// it is stored, so the log arrives whole and once even across a gateway outage. Lines wait in
// memory meanwhile, up to a cap beyond which they are counted and dropped, never blocking TF.
#pragma once

#include <chrono>
#include <condition_variable>
#include <string>
#include <thread>

#include "core/mutex.h"
#include "runner/gateway_client.h"

namespace berth::runner {

class LogShipper {
 public:
  static constexpr size_t kChunkBytes = 256 << 10;
  static constexpr size_t kMaxBuffered = 64 << 20;

  // recipient: an age recipient every chunk is encrypted to before it is sent (empty: none).
  LogShipper(GatewayClient& gateway, std::chrono::milliseconds flush_every,
             std::string recipient = "");
  ~LogShipper();
  LogShipper(const LogShipper&) = delete;
  LogShipper& operator=(const LogShipper&) = delete;

  // line has no newline; it must already be masked.
  void Line(std::string_view line) EXCLUDES(mutex_);
  // Sends what is left and stops; false when some of the log could not be delivered.
  bool Close() EXCLUDES(mutex_);

 private:
  void Loop() EXCLUDES(mutex_);

  GatewayClient& gateway_;
  const std::chrono::milliseconds flush_every_;
  const std::string recipient_;
  Mutex mutex_;
  std::condition_variable_any wake_;
  std::string buffer_ GUARDED_BY(mutex_);
  size_t dropped_ GUARDED_BY(mutex_) = 0;
  bool closing_ GUARDED_BY(mutex_) = false;
  bool lost_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace berth::runner
