#include "launch/local/user_mode_network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPasta = "/usr/bin/pasta";  // Debian's passt
constexpr const char* kShell = "/bin/sh";
constexpr const char* kIpCandidates[] = {"/usr/sbin/ip", "/usr/bin/ip", "/sbin/ip", "/bin/ip"};

bool IsIpv6(const std::string& address) { return address.find(':') != std::string::npos; }

std::string PortList(const std::vector<uint16_t>& ports) {
  std::string list;
  for (uint16_t port : ports) list += (list.empty() ? "" : ",") + std::to_string(port);
  return list;
}

// ip -batch input, one prohibit route per address of the family.
std::string RoutesOf(bool v6, const std::vector<std::string>& addresses) {
  std::string batch;
  for (const std::string& address : addresses) {
    if (IsIpv6(address) == v6)
      batch += "route add prohibit " + address + (v6 ? "/128" : "/32") + "\n";
  }
  return batch;
}

}  // namespace

std::vector<std::string> PastaArgs(const std::vector<uint16_t>& berthd_ports,
                                   const NetworkAllowance& allowance) {
  std::vector<uint16_t> tcp = berthd_ports;
  tcp.push_back(53);  // DNS over TCP, for a resolver on the machine's loopback
  // --no-map-gw: the gateway's address is the real gateway, never the machine's loopback.
  std::vector<std::string> args = {kPasta, "--config-net", "--quiet", "-t", "none", "-u", "none"};
  if (allowance.loopback) {
    args.insert(args.end(), {"-T", "auto", "-U", "auto"});
  } else {
    args.insert(args.end(), {"-T", PortList(tcp), "-U", "53"});
  }
  args.emplace_back("--no-map-gw");
  return args;
}

std::string HoldingRoutesScript(const fs::path& ip,
                                const std::vector<std::string>& machine_addresses,
                                const NetworkAllowance& allowance) {
  std::vector<std::string> held;
  if (!allowance.metadata)
    held.assign(std::begin(kMetadataAddresses), std::end(kMetadataAddresses));
  if (!allowance.loopback) {
    // A metadata address the machine has is the metadata allowance's to open.
    for (const std::string& address : machine_addresses) {
      if (std::find(std::begin(kMetadataAddresses), std::end(kMetadataAddresses), address) ==
          std::end(kMetadataAddresses))
        held.push_back(address);
    }
  }
  std::ostringstream script;
  script << "set -e\n";
  const std::string v4 = RoutesOf(false, held);
  const std::string v6 = RoutesOf(true, held);
  if (!v4.empty()) script << ip.string() << " -4 -batch - <<'ROUTES'\n" << v4 << "ROUTES\n";
  // Without IPv6 in the kernel there is nothing to route, and ip says so.
  if (!v6.empty())
    script << ip.string() << " -6 -batch - <<'ROUTES' || [ ! -e /proc/net/if_inet6 ]\n"
           << v6 << "ROUTES\n";
  script << "exec \"$@\"\n";
  return script.str();
}

bool IsIpAddress(const std::string& host) {
  return host.find_first_not_of("0123456789.") == std::string::npos ||
         host.find(':') != std::string::npos;
}

bool ReachableAtLoopback(const std::string& host) {
  return !IsIpAddress(host) || host == "127.0.0.1" || host == "0.0.0.0";
}

std::vector<std::string> MachineAddresses() {
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addresses;
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owned(list, freeifaddrs);
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (entry->ifa_addr->sa_family == AF_INET) {
      const in_addr& address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr;
      if ((ntohl(address.s_addr) >> 24) == 127) continue;  // the run's own loopback
      inet_ntop(AF_INET, &address, text, sizeof text);
    } else if (entry->ifa_addr->sa_family == AF_INET6) {
      const in6_addr& address = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr)->sin6_addr;
      // Loopback is the run's own; a link-local address needs its link, which the run lacks.
      if (IN6_IS_ADDR_LOOPBACK(&address) || IN6_IS_ADDR_LINKLOCAL(&address)) continue;
      inet_ntop(AF_INET6, &address, text, sizeof text);
    } else {
      continue;
    }
    std::string address(text);
    if (std::find(addresses.begin(), addresses.end(), address) == addresses.end())
      addresses.push_back(std::move(address));
  }
  return addresses;
}

Result<UserModeNetwork> UserModeNetwork::Probe(std::vector<uint16_t> berthd_ports) {
  if (access(kPasta, X_OK) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a berthd that is not root holds its runs' network with pasta, at " +
                         std::string(kPasta) +
                         " (Debian: apt-get install passt), which is missing");
  fs::path ip;
  for (const char* candidate : kIpCandidates) {
    if (access(candidate, X_OK) == 0) {
      ip = candidate;
      break;
    }
  }
  if (ip.empty())
    return MakeError(ErrorKind::kFailedPrecondition,
                     "a berthd that is not root writes its runs' routes with ip (Debian: "
                     "iproute2), which is missing");
  UserModeNetwork network(std::move(berthd_ports), std::move(ip));
  // A real network with its routes, once. Its output goes to a file, not a pipe: pasta that
  // fails to start leaves a process of its own behind, which the group's kill below ends.
  auto dir = sys::TempDir::Create("berth-pasta-probe");
  if (!dir) return dir.error();
  sys::SpawnOptions probe;
  probe.argv = network.Wrap({}, {"/bin/true"});
  probe.env = std::vector<std::string>{};
  probe.output_path = (dir->Path() / "output").string();
  probe.new_process_group = true;
  auto child = sys::Subprocess::Spawn(probe);
  if (!child) return child.error();
  const int exit_code = child->Wait();
  ::kill(-child->Pid(), SIGKILL);
  if (exit_code != 0) {
    auto said = sys::ReadFile(dir->Path() / "output");
    std::string output = said ? *said : "";
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    return MakeError(ErrorKind::kFailedPrecondition,
                     "pasta cannot make a network for runs here (exit " +
                         std::to_string(exit_code) + ": " + output.substr(0, 400) +
                         "): it needs /dev/net/tun open to berthd's user and unprivileged user "
                         "namespaces");
  }
  return network;
}

std::vector<std::string> UserModeNetwork::Wrap(const NetworkAllowance& allowance,
                                               const std::vector<std::string>& sandboxed) const {
  std::vector<std::string> args = PastaArgs(berthd_ports_, allowance);
  args.insert(args.end(),
              {"--", kShell, "-c", HoldingRoutesScript(ip_, MachineAddresses(), allowance),
               "berth-network"});
  args.insert(args.end(), sandboxed.begin(), sandboxed.end());
  return args;
}

}  // namespace berth::launch
