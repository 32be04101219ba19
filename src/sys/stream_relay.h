// Copies bytes both ways between each connection accepted on a listening socket and a new
// connection to a target. It is how a local run whose network is cut reaches berthd and nothing
// else (docs/security.md): inside the run's network namespace the runner accepts on loopback
// and relays to a Unix socket in its folder; outside, berthd accepts on that socket and relays
// to its own address.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "sys/fd.h"

namespace berth::sys {

// Writes all of data to a socket; false when the peer is gone (never SIGPIPE).
bool SendAll(int fd, const char* data, size_t size);

class StreamRelay {
 public:
  using Connect = std::function<Result<Fd>()>;

  // A run's requests to berthd at once: the log, the state and an artifact or two. What its
  // module opens beyond this is closed at once, so that it cannot take berthd's threads.
  static constexpr size_t kMaxConnections = 64;

  // Serves listener (bound and listening) on a thread of its own until destroyed; each
  // connection gets connect()'s socket and a thread that copies until either side closes. A
  // connection beyond max_connections open at once, or one no thread can be started for, is
  // closed at once.
  static Result<std::unique_ptr<StreamRelay>> Start(Fd listener, Connect connect,
                                                    size_t max_connections = kMaxConnections);
  // Stops accepting and ends every relayed connection.
  ~StreamRelay();
  StreamRelay(const StreamRelay&) = delete;
  StreamRelay& operator=(const StreamRelay&) = delete;

 private:
  StreamRelay(Fd listener, Fd stop, Connect connect, size_t max_connections);
  void Accept();
  void Pump(Fd client, Fd target) const;

  Fd listener_;
  Fd stop_;  // an eventfd every loop polls: readable once the relay stops
  Connect connect_;
  const size_t max_connections_;
  // A connection's copying thread; joined once it is done, when the next connection comes.
  struct Pumping {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  Mutex mutex_;
  std::vector<Pumping> pumps_ GUARDED_BY(mutex_);
  std::thread acceptor_;
};

// A Unix stream socket listening at path (a stale socket file there is replaced).
Result<Fd> ListenUnix(const std::string& path);
Result<Fd> ConnectUnix(const std::string& path);
// A TCP socket listening on 127.0.0.1:port; port 0: one the kernel picks, which port then says.
Result<Fd> ListenLoopback(int& port);
// A TCP connection to host:port, trying each address the name resolves to.
Result<Fd> ConnectTcp(const std::string& host, int port);

}  // namespace berth::sys
