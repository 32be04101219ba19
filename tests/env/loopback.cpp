// Readiness polling for test servers: the only place the test environment waits on a clock.
#include "loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "net/http_client.h"
#include "sys/fd.h"
#include "sys/files.h"

namespace berth::testenv {

Result<int> FreeLoopbackPort() {
  sys::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return MakeError(ErrorKind::kInternal, std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return MakeError(ErrorKind::kInternal, std::string("bind: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(fd.Get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool AcceptsTcp(const std::string& ip, int port) {
  sys::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
  return fd && ::connect(fd.Get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
}

Result<void> WaitUntilReady(const std::string& what, sys::Subprocess& process,
                            const std::function<bool()>& ready, std::chrono::seconds timeout,
                            const std::string& log_path) {
  auto tail = [&log_path]() -> std::string {
    if (log_path.empty()) return "";
    auto log = sys::ReadFile(log_path);
    if (!log) return "";
    constexpr size_t kTail = 2000;
    return "\n--- end of " + log_path + " ---\n" +
           (log->size() > kTail ? log->substr(log->size() - kTail) : *log);
  };
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto status = process.TryWait()) {
      return MakeError(ErrorKind::kUnavailable,
                       what + " exited with status " + std::to_string(*status) + tail());
    }
    if (ready()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return MakeError(ErrorKind::kDeadlineExceeded,
                   what + " not ready after " + std::to_string(timeout.count()) + "s" + tail());
}

Result<std::unique_ptr<sys::Subprocess>> StartServing(const std::string& what,
                                                      const sys::SpawnOptions& options,
                                                      const std::string& health_url,
                                                      std::chrono::seconds timeout) {
  auto process = sys::Subprocess::Spawn(options);
  if (!process) return process.error();
  auto started = std::make_unique<sys::Subprocess>(std::move(*process));
  auto http = net::MakeCurlHttpClient({.insecure_skip_verify = true});
  auto ready = WaitUntilReady(
      what, *started,
      [&] {
        auto r = http->Send({.url = health_url, .timeout = std::chrono::seconds(5)});
        return r && r->status == 200;
      },
      timeout, options.output_path);
  if (!ready) return ready.error();
  return started;
}

}  // namespace berth::testenv
