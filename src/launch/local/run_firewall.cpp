#include "launch/local/run_firewall.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <sstream>

#include "sys/fd.h"
#include "sys/subprocess.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChainPrefix = "BERTH-RUNS-";

bool IsIpv6(const char* address) { return std::strchr(address, ':') != nullptr; }

std::vector<const char*> MetadataAddresses(IpFamily family) {
  std::vector<const char*> addresses;
  for (const char* address : kMetadataAddresses) {
    if (IsIpv6(address) == (family == IpFamily::kIpv6)) addresses.push_back(address);
  }
  return addresses;
}

std::string Tool(IpFamily family, const char* what) {
  return std::string(family == IpFamily::kIpv6 ? "ip6tables" : "iptables") + what;
}

// program's output, or an error naming it and what it said.
Result<std::string> Run(const fs::path& program, std::vector<std::string> args,
                        std::vector<int> inherited = {}) {
  sys::SpawnOptions spawn;
  spawn.argv = {program.string()};
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  spawn.env = std::vector<std::string>{};
  spawn.inherited_fds = std::move(inherited);
  auto done = sys::RunToCompletion(std::move(spawn));
  if (!done) return done.error();
  if (done->exit_code != 0)
    return MakeError(
        ErrorKind::kFailedPrecondition,
        program.string() + " failed (" + std::to_string(done->exit_code) + "): " + done->output);
  return done->output;
}

// rules fed to (ip6)iptables-restore --noflush, from an anonymous file.
Result<void> Restore(const fs::path& restore_dir, IpFamily family, const std::string& rules) {
  sys::Fd input(::memfd_create("berth-firewall", MFD_CLOEXEC));
  if (!input) return MakeError(ErrorKind::kInternal, std::string("memfd: ") + strerror(errno));
  if (::write(input.Get(), rules.data(), rules.size()) != static_cast<ssize_t>(rules.size()))
    return MakeError(ErrorKind::kInternal, "cannot write the firewall rules");
  auto done = Run(restore_dir / Tool(family, "-restore"),
                  {"-w", "--noflush", "/dev/fd/" + std::to_string(input.Get())}, {input.Get()});
  if (!done) return done.error();
  return {};
}

// The rules for each family, IPv4 then IPv6.
Result<void> RestoreBoth(const fs::path& restore_dir,
                         const std::function<std::string(IpFamily)>& rules) {
  for (IpFamily family : {IpFamily::kIpv4, IpFamily::kIpv6}) {
    if (auto written = Restore(restore_dir, family, rules(family)); !written) return written;
  }
  return {};
}

std::string UidRange(uid_t first, uid_t last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::string RunChainRules(IpFamily family, uid_t first, uid_t last,
                          const std::vector<uint16_t>& berthd_ports,
                          const std::vector<std::string>& stale_jumps) {
  const std::string chain = kChainPrefix + std::to_string(first);
  std::ostringstream rules;
  rules << "*filter\n";
  for (const std::string& jump : stale_jumps) rules << "-D" << jump.substr(2) << "\n";
  rules << ":" << chain << " - [0:0]\n";  // made, or emptied if there
  for (const char* address : MetadataAddresses(family))
    rules << "-A " << chain << " -d " << address << " -j REJECT\n";
  for (uint16_t port : berthd_ports)
    rules << "-A " << chain << " -o lo -p tcp --dport " << port << " -j RETURN\n";
  for (const char* protocol : {"udp", "tcp"})
    rules << "-A " << chain << " -o lo -p " << protocol << " --dport 53 -j RETURN\n";
  rules << "-A " << chain << " -o lo -j REJECT\n";
  rules << "-I OUTPUT 1 -m owner --uid-owner " << UidRange(first, last) << " -j " << chain << "\n";
  rules << "COMMIT\n";
  return rules.str();
}

std::string RemovalRules(uid_t first, uid_t last) {
  const std::string chain = kChainPrefix + std::to_string(first);
  return "*filter\n-D OUTPUT -m owner --uid-owner " + UidRange(first, last) + " -j " + chain +
         "\n-F " + chain + "\n-X " + chain + "\nCOMMIT\n";
}

std::vector<std::string> StaleJumps(const std::string& listed, uid_t first, uid_t last) {
  std::vector<std::string> stale;
  std::istringstream lines(listed);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("-A OUTPUT ") ||
        line.find(std::string(" -j ") + kChainPrefix) == std::string::npos)
      continue;
    const size_t owner = line.find("--uid-owner ");
    if (owner == std::string::npos) continue;
    const char* range = line.c_str() + owner + std::strlen("--uid-owner ");
    char* end = nullptr;
    const unsigned long low = std::strtoul(range, &end, 10);
    unsigned long high = low;
    if (*end == '-') high = std::strtoul(end + 1, nullptr, 10);
    if (low <= last && high >= first) stale.push_back(line);
  }
  return stale;
}

std::string AllowanceRules(IpFamily family, const std::string& chain, uid_t uid,
                           const NetworkAllowance& allowance, char operation) {
  const std::string rule =
      std::string("-") + operation + " " + chain + " -m owner --uid-owner " + std::to_string(uid);
  std::ostringstream rules;
  rules << "*filter\n";
  if (allowance.metadata) {
    for (const char* address : MetadataAddresses(family))
      rules << rule << " -d " << address << " -j RETURN\n";
  }
  if (allowance.loopback) rules << rule << " -o lo -j RETURN\n";
  rules << "COMMIT\n";
  return rules.str();
}

Result<std::shared_ptr<RunFirewall>> RunFirewall::Install(const std::vector<uid_t>& run_uids,
                                                          const std::vector<uint16_t>& berthd_ports,
                                                          const fs::path& restore_dir) {
  if (run_uids.empty())
    return MakeError(ErrorKind::kInvalidArgument, "a run firewall needs the runs' users");
  const uid_t first = run_uids.front();
  const uid_t last = run_uids.back();
  for (IpFamily family : {IpFamily::kIpv4, IpFamily::kIpv6}) {
    auto listed = Run(restore_dir / Tool(family, ""), {"-w", "-S", "OUTPUT"});
    if (!listed) return listed.error();
    if (auto written = Restore(
            restore_dir, family,
            RunChainRules(family, first, last, berthd_ports, StaleJumps(*listed, first, last)));
        !written)
      return written.error();
  }
  return std::shared_ptr<RunFirewall>(new RunFirewall(first, last, restore_dir));
}

RunFirewall::RunFirewall(uid_t first, uid_t last, fs::path restore_dir)
    : first_(first),
      last_(last),
      chain_(kChainPrefix + std::to_string(first)),
      restore_dir_(std::move(restore_dir)) {}

Result<void> RunFirewall::Remove() const {
  return RestoreBoth(restore_dir_, [&](IpFamily) { return RemovalRules(first_, last_); });
}

Result<void> RunFirewall::Allow(uid_t uid, const NetworkAllowance& allowance) const {
  if (!allowance.Any()) return {};
  return RestoreBoth(restore_dir_, [&](IpFamily family) {
    return AllowanceRules(family, chain_, uid, allowance, 'I');
  });
}

Result<void> RunFirewall::Revoke(uid_t uid, const NetworkAllowance& allowance) const {
  if (!allowance.Any()) return {};
  return RestoreBoth(restore_dir_, [&](IpFamily family) {
    return AllowanceRules(family, chain_, uid, allowance, 'D');
  });
}

}  // namespace berth::launch
