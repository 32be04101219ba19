// What a berthd that is not root gives pasta and the shell that writes a run's routes
// (local_launcher_test runs them for real, as a user that is not root).
#include "launch/local/user_mode_network.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace berth::launch {
namespace {

TEST(UserModeNetworkTest, OfTheMachinesLoopbackARunReachesBerthdsPortsAndDnsAlone) {
  const auto held = PastaArgs({8480, 9443}, {});
  const std::vector<std::string> expected = {
      "/usr/bin/pasta", "--config-net", "--quiet",      "-t", "none", "-u",
      "none",           "-T",           "8480,9443,53", "-U", "53",   "--no-map-gw"};
  EXPECT_EQ(held, expected);
  const auto opened = PastaArgs({8480}, {.loopback = true});
  EXPECT_NE(std::find(opened.begin(), opened.end(), "auto"), opened.end());
  EXPECT_EQ(std::find(opened.begin(), opened.end(), "8480,53"), opened.end());
  EXPECT_EQ(PastaArgs({8480}, {.metadata = true}), PastaArgs({8480}, {}))
      << "metadata is routes, not ports";
}

TEST(UserModeNetworkTest, RoutesHoldTheMetadataServicesAndTheMachinesAddressesUnlessAllowed) {
  const std::string held =
      HoldingRoutesScript("/usr/sbin/ip", {"192.0.2.2", "169.254.170.2", "fd00::2"}, {});
  EXPECT_EQ(held,
            "set -e\n"
            "/usr/sbin/ip -4 -batch - <<'ROUTES'\n"
            "route add prohibit 169.254.169.254/32\n"
            "route add prohibit 169.254.170.2/32\n"
            "route add prohibit 100.100.100.200/32\n"
            "route add prohibit 192.0.2.2/32\n"
            "ROUTES\n"
            "/usr/sbin/ip -6 -batch - <<'ROUTES' || [ ! -e /proc/net/if_inet6 ]\n"
            "route add prohibit fd00:ec2::254/128\n"
            "route add prohibit fd00::2/128\n"
            "ROUTES\n"
            "exec \"$@\"\n");
  const std::string metadata =
      HoldingRoutesScript("/usr/sbin/ip", {"192.0.2.2", "169.254.169.254"}, {.metadata = true});
  EXPECT_EQ(metadata.find("169.254"), std::string::npos) << metadata;
  EXPECT_NE(metadata.find("prohibit 192.0.2.2/32"), std::string::npos) << metadata;
  const std::string both =
      HoldingRoutesScript("/usr/sbin/ip", {"192.0.2.2"}, {.metadata = true, .loopback = true});
  EXPECT_EQ(both, "set -e\nexec \"$@\"\n");
}

TEST(UserModeNetworkTest, ARunIsPointedAtBerthdOnItsLoopbackByANameOrALoopbackAddressOnly) {
  EXPECT_TRUE(ReachableAtLoopback("berth.example.com"));
  EXPECT_TRUE(ReachableAtLoopback("localhost"));
  EXPECT_TRUE(ReachableAtLoopback("127.0.0.1"));
  EXPECT_TRUE(ReachableAtLoopback("0.0.0.0"));
  EXPECT_FALSE(ReachableAtLoopback("192.0.2.2"));
  EXPECT_FALSE(ReachableAtLoopback("::1"));
  EXPECT_FALSE(ReachableAtLoopback("fd00::2"));
}

TEST(UserModeNetworkTest, TheMachinesAddressesLeaveOutLoopbackAndLinkLocal) {
  for (const std::string& address : MachineAddresses()) {
    EXPECT_FALSE(address.starts_with("127.")) << address;
    EXPECT_NE(address, "::1");
    EXPECT_FALSE(address.starts_with("fe80:")) << address;
  }
}

}  // namespace
}  // namespace berth::launch
