// OpenSSH known_hosts, as a Git Secret's `known_hosts` holds it (ssh-keyscan's lines, plain or
// hashed): the only way berth-controller trusts an SSH Git server's host key.
#pragma once

#include <string_view>

namespace berth::controller {

// Whether known_hosts lists exactly this host key (its SSH wire-format blob) for host:port
// (written `[host]:port` unless the port is 22). Names match exactly or by their hash;
// wildcard patterns and marked lines (@cert-authority, @revoked) never match.
bool KnownHostsAccept(std::string_view known_hosts, std::string_view host, int port,
                      std::string_view host_key);

}  // namespace berth::controller
