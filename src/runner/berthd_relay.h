// --berthd-relay=SOCKET: the run's network is cut (a local runner's `network: berthd_only`) and
// berthd is reached only through a Unix socket in the run's folder. In its own network
// namespace the runner listens on 127.0.0.1 at the port of berthd's URL (--gateway) and relays
// each connection to that socket; the sandbox's /etc/hosts maps berthd's host name to
// 127.0.0.1. URLs do not change, so TLS still checks berthd's certificate and a plan saved by
// one run (which holds its backend's address) applies in the next.
#pragma once

#include <memory>

#include "core/error.h"
#include "runner/options.h"
#include "sys/stream_relay.h"

namespace berth::runner {

Result<std::unique_ptr<sys::StreamRelay>> RelayToBerthd(const RunOptions& options);

}  // namespace berth::runner
