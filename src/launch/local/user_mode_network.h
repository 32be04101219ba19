// What a berthd that is not root gives its local runs with `network: full`: a network namespace
// of their own behind a user-mode network (pasta, Debian's `passt`, the network of rootless
// Podman). Its runs are berthd's own user, which no firewall rule on the machine can tell from
// berthd (run_firewall.h is the root berthd's way); in a network of their own they reach the
// world through pasta, which connects for them from the machine, except where the namespace
// routes nothing:
//   - the cloud metadata services (kMetadataAddresses): a `prohibit` route each;
//   - the machine's own addresses other than loopback: a `prohibit` route each;
//   - of the machine's loopback, berthd's ports and DNS (port 53) only, forwarded by pasta to
//     the run's own 127.0.0.1 (so a run reaches berthd at 127.0.0.1, or at a host name its
//     /etc/hosts points there).
// The routes are written by a shell that is root of the namespace's user namespace, before it
// becomes the sandbox (bwrap), whose user namespace is a child of that one: the run has no
// capability over its network and cannot take the routes away. A runner's network_allow opens
// either part for its runs: `metadata` adds no metadata route, `loopback` adds no route for the
// machine's addresses and forwards every port the machine listens on at loopback.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch/local/run_firewall.h"

namespace berth::launch {

class UserModeNetwork {
 public:
  // Whether pasta can make a network here, tried once with a real one (it needs /dev/net/tun
  // open to berthd's user and unprivileged user namespaces); the error says what is missing.
  // berthd_ports: what runs reach of the machine's loopback (its API, its advertised port).
  static Result<UserModeNetwork> Probe(std::vector<uint16_t> berthd_ports);

  // The argv that runs sandboxed (the sandbox's argv) in a network of its own, as allowance
  // opens it. The machine's addresses are read at each call: they change.
  std::vector<std::string> Wrap(const NetworkAllowance& allowance,
                                const std::vector<std::string>& sandboxed) const;

 private:
  UserModeNetwork(std::vector<uint16_t> berthd_ports, std::filesystem::path ip)
      : berthd_ports_(std::move(berthd_ports)), ip_(std::move(ip)) {}
  std::vector<uint16_t> berthd_ports_;
  std::filesystem::path ip_;
};

// pasta's arguments before its command: no port from outside in; from the run's loopback, the
// ports given (TCP; and UDP 53), or every port the machine listens on when loopback is allowed;
// the gateway is not the machine. Pure, for tests.
std::vector<std::string> PastaArgs(const std::vector<uint16_t>& berthd_ports,
                                   const NetworkAllowance& allowance);

// The shell script that writes the namespace's routes with ip and then becomes its arguments
// ("$@"): a prohibit route for each metadata address (unless allowed) and each of
// machine_addresses (unless loopback is allowed). IPv6 routes may fail only where the kernel
// has no IPv6. Pure, for tests.
std::string HoldingRoutesScript(const std::filesystem::path& ip,
                                const std::vector<std::string>& machine_addresses,
                                const NetworkAllowance& allowance);

// Whether host (of berthd's URL) is an IP address rather than a name.
bool IsIpAddress(const std::string& host);
// Whether a run in a network of its own can reach berthd at host on its own loopback: a name
// (the run's /etc/hosts points it there), 127.0.0.1 or 0.0.0.0 (which connects there); not
// another address.
bool ReachableAtLoopback(const std::string& host);

// This machine's addresses other than loopback and link-local ones, IPv4 and IPv6.
std::vector<std::string> MachineAddresses();

}  // namespace berth::launch
