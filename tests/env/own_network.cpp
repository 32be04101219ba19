#include "own_network.h"

#include <sched.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "launch/local/run_firewall.h"
#include "sys/subprocess.h"

namespace berth::testenv {
namespace {

bool entered = false;

}  // namespace

Result<void> EnterOwnNetwork() {
  if (geteuid() != 0) return {};
  if (unshare(CLONE_NEWNET) != 0)
    return MakeError(ErrorKind::kFailedPrecondition, "cannot unshare the network namespace");
  std::vector<std::vector<std::string>> commands = {{"/usr/sbin/ip", "link", "set", "lo", "up"}};
  for (const char* address : launch::kMetadataAddresses) {
    const bool v6 = std::string(address).find(':') != std::string::npos;
    commands.push_back({"/usr/sbin/ip", v6 ? "-6" : "-4", "addr", "add",
                        std::string(address) + (v6 ? "/128" : "/32"), "dev", "lo"});
  }
  for (auto& argv : commands) {
    const std::string line = argv[3] + " " + argv[4];
    auto done = sys::RunToCompletion({.argv = std::move(argv)});
    if (!done) return done.error();
    if (done->exit_code != 0)
      return MakeError(ErrorKind::kInternal, "ip " + line + " failed: " + done->output);
  }
  entered = true;
  return {};
}

bool InOwnNetwork() { return entered; }

}  // namespace berth::testenv
