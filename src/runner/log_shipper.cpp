#include "runner/log_shipper.h"

#include "crypto/age.h"

namespace berth::runner {

LogShipper::LogShipper(GatewayClient& gateway, std::chrono::milliseconds flush_every,
                       std::string recipient)
    : gateway_(gateway),
      flush_every_(flush_every),
      recipient_(std::move(recipient)),
      thread_([this] { Loop(); }) {}

LogShipper::~LogShipper() { Close(); }

void LogShipper::Line(std::string_view line) {
  {
    MutexLock lock(mutex_);
    if (buffer_.size() + line.size() + 1 > kMaxBuffered) {
      ++dropped_;
      return;
    }
    buffer_.append(line);
    buffer_.push_back('\n');
    if (buffer_.size() < kChunkBytes) return;
  }
  wake_.notify_one();
}

bool LogShipper::Close() {
  {
    MutexLock lock(mutex_);
    if (closing_ && !thread_.joinable()) return !lost_;
    closing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(mutex_);
  return !lost_;
}

void LogShipper::Loop() {
  int64_t seq = 0;
  for (;;) {
    std::string chunk;
    bool last = false;
    {
      MutexLock lock(mutex_);
      wake_.wait_for(mutex_, flush_every_,
                     [&]() REQUIRES(mutex_) { return closing_ || buffer_.size() >= kChunkBytes; });
      if (dropped_ > 0 && buffer_.size() < kMaxBuffered) {
        buffer_ += "[runner] " + std::to_string(dropped_) +
                   " log lines dropped while the gateway was unreachable\n";
        dropped_ = 0;
      }
      // Whole lines, at most a chunk (a longer single line goes alone).
      size_t take = buffer_.size();
      if (take > kChunkBytes) {
        size_t newline = buffer_.rfind('\n', kChunkBytes - 1);
        take = newline == std::string::npos ? buffer_.find('\n') + 1 : newline + 1;
      }
      chunk = buffer_.substr(0, take);
      buffer_.erase(0, take);
      last = closing_ && buffer_.empty();
    }
    if (!chunk.empty() && !recipient_.empty()) {
      // Never sent in clear: a chunk that cannot be encrypted is lost, and the loss said.
      auto sealed = crypto::AgeEncryptArmored(chunk, recipient_);
      chunk = sealed ? std::move(*sealed) : std::string();
      if (!sealed) {
        MutexLock lock(mutex_);
        lost_ = true;
      }
    }
    if (!chunk.empty()) {
      if (!gateway_.AppendLog(++seq, chunk)) {
        MutexLock lock(mutex_);
        lost_ = true;
      }
    }
    if (last) return;
  }
}

}  // namespace berth::runner
