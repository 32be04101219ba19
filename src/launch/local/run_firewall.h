// What a root berthd's local runs with `network: full` cannot reach: the cloud metadata
// services (the machine role's credentials) and this machine's other services on its own
// addresses (berthd's database, other daemons, anything bound to 127.0.0.1). Netfilter rules
// match the run's user (iptables' owner match): a root berthd gives each run a user of its own
// from a range no one else has (run_users.h). Of this machine, runs reach berthd's own ports
// (its API, which runners report to) and DNS only. A runner's network_allow opens either for
// its runs: a rule for the run's user while it runs.
//
// The rules live in a chain of their own, BERTH-RUNS-<first uid>, in the filter table's OUTPUT,
// for IPv4 and IPv6, written by iptables-restore (Debian's `iptables`). They stay when berthd
// stops (its runs go on) and are written anew at its next start.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace berth::launch {

// The cloud metadata services (AWS, GCP and Azure; ECS tasks; Alibaba; AWS over IPv6).
inline constexpr const char* kMetadataAddresses[] = {"169.254.169.254", "169.254.170.2",
                                                     "100.100.100.200", "fd00:ec2::254"};

// What a runner's network_allow opens for its runs.
struct NetworkAllowance {
  bool metadata = false;  // the addresses above
  bool loopback = false;  // every port of this machine's own addresses
  bool Any() const { return metadata || loopback; }
};

enum class IpFamily { kIpv4, kIpv6 };

class RunFirewall {
 public:
  // The chain for the run users (consecutive, as RunUserClaim holds them), replacing what an
  // earlier berthd left for any of them; berthd_ports are what runs reach of this machine.
  // restore_dir holds iptables-restore and ip6tables-restore.
  static Result<std::shared_ptr<RunFirewall>> Install(
      const std::vector<uid_t>& run_uids, const std::vector<uint16_t>& berthd_ports,
      const std::filesystem::path& restore_dir = "/usr/sbin");

  // The chain and its jump gone, when no run of these users is left to hold: runs outlive a
  // berthd that stops, so berthd removes them only once none is running.
  Result<void> Remove() const;

  // Opens what allowance names for the run of user uid, until Revoke.
  Result<void> Allow(uid_t uid, const NetworkAllowance& allowance) const;
  Result<void> Revoke(uid_t uid, const NetworkAllowance& allowance) const;

  const std::string& Chain() const { return chain_; }

 private:
  RunFirewall(uid_t first, uid_t last, std::filesystem::path restore_dir);
  uid_t first_;
  uid_t last_;
  std::string chain_;
  std::filesystem::path restore_dir_;
};

// iptables-restore's input (--noflush) for one family: the chain for the users first..last,
// made or emptied, and its jump from OUTPUT; stale_jumps are OUTPUT rules (as iptables -S
// prints them) that an earlier berthd left for any of these users, deleted. Pure, for tests.
std::string RunChainRules(IpFamily family, uid_t first, uid_t last,
                          const std::vector<uint16_t>& berthd_ports,
                          const std::vector<std::string>& stale_jumps);
// iptables-restore's input that deletes the chain for the users first..last and its jump.
std::string RemovalRules(uid_t first, uid_t last);
// The OUTPUT rules of listed (iptables -S OUTPUT) that jump to a BERTH-RUNS chain for any user
// of first..last.
std::vector<std::string> StaleJumps(const std::string& listed, uid_t first, uid_t last);
// The rules that open allowance for uid in chain: inserted ('I') or deleted ('D').
std::string AllowanceRules(IpFamily family, const std::string& chain, uid_t uid,
                           const NetworkAllowance& allowance, char operation);

}  // namespace berth::launch
