#include "faulty_network.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sys/stream_relay.h"

namespace berth::testenv {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

}  // namespace

Result<std::unique_ptr<FaultyNetwork>> FaultyNetwork::Start(int target_port, NetworkFaults faults) {
  sys::Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return MakeError(ErrorKind::kInternal, std::strerror(errno), "socket");
  sockaddr_in addr = Loopback(0);
  if (bind(listener.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener.Get(), 128) != 0)
    return MakeError(ErrorKind::kInternal, std::strerror(errno), "bind");
  socklen_t len = sizeof addr;
  getsockname(listener.Get(), reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<FaultyNetwork> network(
      new FaultyNetwork(std::move(listener), ntohs(addr.sin_port), target_port, faults));
  network->acceptor_ = std::thread([raw = network.get()] { raw->Accept(); });
  return network;
}

FaultyNetwork::~FaultyNetwork() {
  stopping_ = true;
  shutdown(listener_.Get(), SHUT_RDWR);
  acceptor_.join();
  std::vector<std::thread> carriers;
  {
    MutexLock lock(mutex_);
    for (int fd : open_) shutdown(fd, SHUT_RDWR);
    carriers.swap(carriers_);
  }
  for (auto& carrier : carriers) carrier.join();
}

void FaultyNetwork::Accept() {
  for (int n = 0; !stopping_.load(); ++n) {
    sys::Fd client(accept4(listener_.Get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
      if (stopping_.load()) return;
      continue;
    }
    ++connections_;
    std::optional<Cut> cut;
    if (faults_.cut_within_bytes > 0 && n % 2 == 0) {
      // An answer's head is a couple of hundred bytes: cut within it, or a request anywhere.
      const bool in_response = (random_() % 2) == 1;
      std::uniform_int_distribution<size_t> at(1, in_response ? 160 : faults_.cut_within_bytes);
      cut = Cut{.in_response = in_response, .at_byte = at(random_)};
    }
    MutexLock lock(mutex_);
    carriers_.emplace_back(
        [this, client = std::move(client), cut]() mutable { Carry(std::move(client), cut); });
  }
}

void FaultyNetwork::Carry(sys::Fd client, std::optional<Cut> cut) {
  sys::Fd server(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in target = Loopback(target_port_);
  if (!server || connect(server.Get(), reinterpret_cast<sockaddr*>(&target), sizeof target) != 0)
    return;
  {
    MutexLock lock(mutex_);
    if (stopping_.load()) return;
    open_.insert(open_.end(), {client.Get(), server.Get()});
  }
  // [0]: client to server (the request), [1]: server to client (the response).
  const int from[2] = {client.Get(), server.Get()}, to[2] = {server.Get(), client.Get()};
  size_t carried[2] = {0, 0};
  char buffer[16384];
  for (bool open = true; open && !stopping_.load();) {
    pollfd fds[2] = {{from[0], POLLIN, 0}, {from[1], POLLIN, 0}};
    // A connection idle for a moment is closed, as servers and balancers do: clients connect
    // again, and every other new connection is a faulty one.
    int ready = poll(fds, 2, 100);
    if (ready == 0 || (ready < 0 && errno != EINTR)) break;
    for (int way = 0; way < 2 && open; ++way) {
      if (fds[way].revents == 0) continue;
      ssize_t n = recv(from[way], buffer, sizeof buffer, 0);
      if (n <= 0) {
        open = false;
        break;
      }
      if (faults_.delay.count() > 0) std::this_thread::sleep_for(faults_.delay);
      size_t size = static_cast<size_t>(n);
      const bool cut_here =
          cut && cut->in_response == (way == 1) && carried[way] + size >= cut->at_byte;
      if (cut_here) size = cut->at_byte - carried[way];
      if (!sys::SendAll(to[way], buffer, size)) open = false;
      carried[way] += size;
      if (cut_here) {
        ++(way == 0 ? cut_requests_ : cut_responses_);
        open = false;
      }
    }
  }
  MutexLock lock(mutex_);
  std::erase_if(open_, [&](int fd) { return fd == client.Get() || fd == server.Get(); });
}

}  // namespace berth::testenv
