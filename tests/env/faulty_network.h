// A TCP proxy on loopback that misbehaves as a network does, for tests that must lose nothing
// to it: every piece it forwards can be delayed, and every other connection it carries is cut
// at a byte chosen from a seeded sequence, either while the client is still sending (the server
// sees a request cut short) or while the server answers (the server acted; the client never
// hears it and sends again). The connections in between are left whole, so a client that retries
// always gets through; any connection idle for 100 ms is closed, as balancers do.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"
#include "sys/fd.h"

namespace berth::testenv {

struct NetworkFaults {
  std::chrono::milliseconds delay{0};  // before each piece is forwarded, either way
  // Cuts every other connection (0: none), half of them in the request, at a byte up to this
  // many, half in the answer's head.
  size_t cut_within_bytes = 0;
  uint32_t seed = 1;
};

class FaultyNetwork {
 public:
  // Listens on a free loopback port and forwards each connection to 127.0.0.1:target_port.
  static Result<std::unique_ptr<FaultyNetwork>> Start(int target_port, NetworkFaults faults);
  ~FaultyNetwork();  // stops accepting, closes every connection
  FaultyNetwork(const FaultyNetwork&) = delete;
  FaultyNetwork& operator=(const FaultyNetwork&) = delete;

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int Connections() const { return connections_.load(); }
  int CutRequests() const { return cut_requests_.load(); }    // cut while the client sent
  int CutResponses() const { return cut_responses_.load(); }  // cut while the server answered

 private:
  struct Cut {
    bool in_response = false;
    size_t at_byte = 0;  // of that direction's stream
  };
  FaultyNetwork(sys::Fd listener, int port, int target_port, NetworkFaults faults)
      : listener_(std::move(listener)),
        port_(port),
        target_port_(target_port),
        faults_(faults),
        random_(faults.seed) {}
  void Accept();
  void Carry(sys::Fd client, std::optional<Cut> cut);

  sys::Fd listener_;
  const int port_, target_port_;
  const NetworkFaults faults_;
  std::mt19937 random_;  // the accept thread's only
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0}, cut_requests_{0}, cut_responses_{0};
  Mutex mutex_;
  std::vector<int> open_ GUARDED_BY(mutex_);  // every carried socket, to shut down at the end
  std::vector<std::thread> carriers_ GUARDED_BY(mutex_);
  std::thread acceptor_;
};

}  // namespace berth::testenv
