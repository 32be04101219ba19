// known_hosts as berth-controller reads it to trust an SSH Git server (no trust on first use).
#include "controller/known_hosts.h"

#include <gtest/gtest.h>

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::controller {
namespace {

// Stand-ins for host key blobs: the comparison is of their bytes.
const std::string kKey = "ssh-ed25519 blob one";
const std::string kOther = "ssh-ed25519 blob two";

std::string Line(const std::string& names, const std::string& key) {
  return names + " ssh-ed25519 " + Base64Encode(key) + "\n";
}

TEST(KnownHosts, AcceptsTheListedKeyForTheListedNameAndPort) {
  const std::string hosts = "# comment\n" + Line("git.example.com,10.0.0.1", kKey) +
                            Line("[git.example.com]:2222", kOther);
  EXPECT_TRUE(KnownHostsAccept(hosts, "git.example.com", 22, kKey));
  EXPECT_TRUE(KnownHostsAccept(hosts, "10.0.0.1", 22, kKey));
  EXPECT_TRUE(KnownHostsAccept(hosts, "git.example.com", 2222, kOther));
  EXPECT_FALSE(KnownHostsAccept(hosts, "git.example.com", 22, kOther)) << "another key";
  EXPECT_FALSE(KnownHostsAccept(hosts, "git.example.com", 2222, kKey)) << "another port";
  EXPECT_FALSE(KnownHostsAccept(hosts, "evil.example.com", 22, kKey)) << "another host";
  EXPECT_FALSE(KnownHostsAccept("", "git.example.com", 22, kKey));
}

TEST(KnownHosts, ReadsHashedNamesAndNeverWildcardsOrMarkedLines) {
  const std::string salt = "0123456789abcdefghij";
  const std::string hashed =
      "|1|" + Base64Encode(salt) + "|" + Base64Encode(crypto::HmacSha1(salt, "git.example.com"));
  EXPECT_TRUE(KnownHostsAccept(Line(hashed, kKey), "git.example.com", 22, kKey));
  EXPECT_FALSE(KnownHostsAccept(Line(hashed, kKey), "git.example.org", 22, kKey));
  EXPECT_FALSE(KnownHostsAccept(Line("*.example.com", kKey), "git.example.com", 22, kKey));
  EXPECT_FALSE(
      KnownHostsAccept("@revoked " + Line("git.example.com", kKey), "git.example.com", 22, kKey));
  EXPECT_FALSE(
      KnownHostsAccept("git.example.com ssh-ed25519 not-base64!\n", "git.example.com", 22, kKey));
}

}  // namespace
}  // namespace berth::controller
