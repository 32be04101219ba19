#include "sys/stream_relay.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace berth::sys {
namespace {

Error SocketError(const std::string& what) {
  return MakeError(ErrorKind::kUnavailable, what + ": " + std::strerror(errno));
}

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path)
    return MakeError(ErrorKind::kInvalidArgument, "socket path too long: " + path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

Result<std::unique_ptr<StreamRelay>> StreamRelay::Start(Fd listener, Connect connect,
                                                        size_t max_connections) {
  Fd stop(eventfd(0, EFD_CLOEXEC));
  if (!stop) return SocketError("eventfd");
  std::unique_ptr<StreamRelay> relay(
      new StreamRelay(std::move(listener), std::move(stop), std::move(connect), max_connections));
  try {
    relay->acceptor_ = std::thread([raw = relay.get()] { raw->Accept(); });
  } catch (const std::system_error& e) {
    return MakeError(ErrorKind::kResourceExhausted,
                     std::string("cannot start the relay's thread: ") + e.what());
  }
  return relay;
}

StreamRelay::StreamRelay(Fd listener, Fd stop, Connect connect, size_t max_connections)
    : listener_(std::move(listener)),
      stop_(std::move(stop)),
      connect_(std::move(connect)),
      max_connections_(max_connections) {}

StreamRelay::~StreamRelay() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(stop_.Get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<Pumping> pumps;
  {
    MutexLock lock(mutex_);
    pumps.swap(pumps_);
  }
  for (Pumping& pump : pumps) pump.thread.join();
}

void StreamRelay::Accept() {
  for (;;) {
    std::array<pollfd, 2> fds{pollfd{listener_.Get(), POLLIN, 0}, pollfd{stop_.Get(), POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    Fd client(::accept4(listener_.Get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) continue;  // the client gave up before it was accepted
    MutexLock lock(mutex_);
    // A long run opens many connections (a log shipped every second): the ended ones go.
    std::erase_if(pumps_, [](Pumping& pump) {
      if (!pump.done->load()) return false;
      pump.thread.join();
      return true;
    });
    if (pumps_.size() >= max_connections_) continue;  // closed: the client may try again later
    auto target = connect_();
    if (!target) continue;  // closing the client tells it: nothing is behind the relay now
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
      pumps_.push_back(
          {std::thread([this, done, c = std::move(client), t = std::move(*target)]() mutable {
             Pump(std::move(c), std::move(t));
             done->store(true);
           }),
           done});
    } catch (const std::system_error&) {
      // No thread to be had (the machine's limit): this connection is closed (its descriptors
      // went with the thread's function), not berthd.
      continue;
    }
  }
}

void StreamRelay::Pump(Fd client, Fd target) const {
  std::array<char, size_t{64} << 10> buffer{};
  // A side that has sent its last byte is shut down for writing on the other; the relay ends
  // when both directions have.
  std::array<bool, 2> open{true, true};
  const std::array<int, 2> from{client.Get(), target.Get()};
  while (open[0] || open[1]) {
    std::array<pollfd, 3> fds{pollfd{open[0] ? from[0] : -1, POLLIN, 0},
                              pollfd{open[1] ? from[1] : -1, POLLIN, 0},
                              pollfd{stop_.Get(), POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[2].revents != 0) return;
    for (size_t side = 0; side < 2; ++side) {
      if (!open[side] || fds[side].revents == 0) continue;
      ssize_t n = ::recv(from[side], buffer.data(), buffer.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      int to = from[1 - side];
      if (n <= 0) {
        open[side] = false;
        ::shutdown(to, SHUT_WR);
        continue;
      }
      if (!SendAll(to, buffer.data(), static_cast<size_t>(n))) return;
    }
  }
}

Result<Fd> ListenUnix(const std::string& path) {
  auto address = UnixAddress(path);
  if (!address) return address.error();
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SocketError("socket");
  ::unlink(path.c_str());
  if (::bind(fd.Get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0)
    return SocketError("bind " + path);
  if (::listen(fd.Get(), 64) != 0) return SocketError("listen " + path);
  return fd;
}

Result<Fd> ConnectUnix(const std::string& path) {
  auto address = UnixAddress(path);
  if (!address) return address.error();
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SocketError("socket");
  if (::connect(fd.Get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0)
    return SocketError("connect " + path);
  return fd;
}

Result<Fd> ListenLoopback(int& port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SocketError("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t length = sizeof address;
  if (::bind(fd.Get(), reinterpret_cast<const sockaddr*>(&address), length) != 0)
    return SocketError("bind 127.0.0.1:" + std::to_string(port));
  if (::listen(fd.Get(), 64) != 0) return SocketError("listen 127.0.0.1");
  if (::getsockname(fd.Get(), reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return SocketError("getsockname");
  port = ntohs(address.sin_port);
  return fd;
}

Result<Fd> ConnectTcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return MakeError(ErrorKind::kUnavailable, "cannot resolve " + host + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, freeaddrinfo);
  for (addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd && ::connect(fd.Get(), a->ai_addr, a->ai_addrlen) == 0) return fd;
  }
  return SocketError("connect " + host + ":" + std::to_string(port));
}

}  // namespace berth::sys
