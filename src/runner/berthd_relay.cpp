#include "runner/berthd_relay.h"

#include "core/http_url.h"

namespace berth::runner {

Result<std::unique_ptr<sys::StreamRelay>> RelayToBerthd(const RunOptions& options) {
  auto berthd = HttpUrl::Parse(options.gateway);
  if (!berthd) return berthd.error();
  int port = berthd->port;
  auto listener = sys::ListenLoopback(port);
  if (!listener) return listener.error();
  return sys::StreamRelay::Start(
      std::move(*listener), [socket = options.berthd_relay] { return sys::ConnectUnix(socket); });
}

}  // namespace berth::runner
