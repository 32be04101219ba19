// The rules of the runs' firewall as iptables-restore reads them (local_launcher_test runs them
// for real, in a network namespace of its own).
#include "launch/local/run_firewall.h"

#include <gtest/gtest.h>

namespace berth::launch {
namespace {

TEST(RunFirewallTest, RunsReachBerthdsPortsAndDnsOfThisMachineAndNoMetadataService) {
  const std::string v4 = RunChainRules(IpFamily::kIpv4, 60100, 60103, {8480, 443}, {});
  EXPECT_EQ(v4,
            "*filter\n"
            ":BERTH-RUNS-60100 - [0:0]\n"
            "-A BERTH-RUNS-60100 -d 169.254.169.254 -j REJECT\n"
            "-A BERTH-RUNS-60100 -d 169.254.170.2 -j REJECT\n"
            "-A BERTH-RUNS-60100 -d 100.100.100.200 -j REJECT\n"
            "-A BERTH-RUNS-60100 -o lo -p tcp --dport 8480 -j RETURN\n"
            "-A BERTH-RUNS-60100 -o lo -p tcp --dport 443 -j RETURN\n"
            "-A BERTH-RUNS-60100 -o lo -p udp --dport 53 -j RETURN\n"
            "-A BERTH-RUNS-60100 -o lo -p tcp --dport 53 -j RETURN\n"
            "-A BERTH-RUNS-60100 -o lo -j REJECT\n"
            "-I OUTPUT 1 -m owner --uid-owner 60100-60103 -j BERTH-RUNS-60100\n"
            "COMMIT\n");
  const std::string v6 = RunChainRules(IpFamily::kIpv6, 60100, 60100, {8480}, {});
  EXPECT_NE(v6.find("-A BERTH-RUNS-60100 -d fd00:ec2::254 -j REJECT\n"), std::string::npos) << v6;
  EXPECT_EQ(v6.find("169.254"), std::string::npos) << "an IPv4 address in ip6tables' rules";
  EXPECT_NE(v6.find("--uid-owner 60100 -j"), std::string::npos) << "one user, no range: " << v6;
}

// A berthd killed leaves its jump behind; the next one to hold any of its users deletes it,
// whoever's chain it names, and keeps the jumps of users it does not hold.
TEST(RunFirewallTest, JumpsAnEarlierBerthdLeftForTheseUsersAreDeleted) {
  const std::string listed =
      "-P OUTPUT ACCEPT\n"
      "-A OUTPUT -m owner --uid-owner 60100-60103 -j BERTH-RUNS-60100\n"
      "-A OUTPUT -m owner --uid-owner 60102-60109 -j BERTH-RUNS-60102\n"
      "-A OUTPUT -m owner --uid-owner 60104 -j BERTH-RUNS-60104\n"
      "-A OUTPUT -m owner --uid-owner 60200-60203 -j BERTH-RUNS-60200\n"
      "-A OUTPUT -m owner --uid-owner 60103 -j ACCEPT\n";
  const auto stale = StaleJumps(listed, 60103, 60104);
  ASSERT_EQ(stale.size(), 3u);
  EXPECT_EQ(stale[0], "-A OUTPUT -m owner --uid-owner 60100-60103 -j BERTH-RUNS-60100");
  EXPECT_EQ(stale[1], "-A OUTPUT -m owner --uid-owner 60102-60109 -j BERTH-RUNS-60102");
  EXPECT_EQ(stale[2], "-A OUTPUT -m owner --uid-owner 60104 -j BERTH-RUNS-60104");
  EXPECT_NE(RunChainRules(IpFamily::kIpv4, 60103, 60104, {8480}, stale)
                .find("*filter\n-D OUTPUT -m owner --uid-owner 60100-60103 -j BERTH-RUNS-60100\n"),
            std::string::npos);
}

TEST(RunFirewallTest, AnAllowanceIsTheRunsUsersAloneAndDeletedAsItWasInserted) {
  const std::string opened = AllowanceRules(IpFamily::kIpv4, "BERTH-RUNS-60100", 60102,
                                            {.metadata = true, .loopback = true}, 'I');
  EXPECT_EQ(opened,
            "*filter\n"
            "-I BERTH-RUNS-60100 -m owner --uid-owner 60102 -d 169.254.169.254 -j RETURN\n"
            "-I BERTH-RUNS-60100 -m owner --uid-owner 60102 -d 169.254.170.2 -j RETURN\n"
            "-I BERTH-RUNS-60100 -m owner --uid-owner 60102 -d 100.100.100.200 -j RETURN\n"
            "-I BERTH-RUNS-60100 -m owner --uid-owner 60102 -o lo -j RETURN\n"
            "COMMIT\n");
  std::string closed = opened;
  for (size_t at = 0; (at = closed.find("-I ", at)) != std::string::npos;) closed[at + 1] = 'D';
  EXPECT_EQ(AllowanceRules(IpFamily::kIpv4, "BERTH-RUNS-60100", 60102,
                           {.metadata = true, .loopback = true}, 'D'),
            closed);
  EXPECT_EQ(AllowanceRules(IpFamily::kIpv6, "BERTH-RUNS-60100", 60102, {.loopback = true}, 'I'),
            "*filter\n-I BERTH-RUNS-60100 -m owner --uid-owner 60102 -o lo -j RETURN\nCOMMIT\n");
}

}  // namespace
}  // namespace berth::launch
