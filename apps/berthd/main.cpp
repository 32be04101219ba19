// berthd: the control plane (docs/api.md). Its flags are server/daemon_flags.h's.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>

#include "server/daemon.h"
#include "server/daemon_flags.h"

static std::atomic<bool> g_stop{false};
static void OnSignal(int) { g_stop = true; }

int main(int argc, char** argv) {
  CLI::App app{"berthd: the berth control plane"};
  berth::server::DaemonFlags flags(app, berth::server::DaemonCommand::kBerthd);
  auto* rotate = app.add_subcommand(
      "rotate-keys",
      "seal every secret in the database with a new key and drop the keys nothing uses");
  rotate->fallthrough();
  bool seal_plaintext = false;
  rotate->add_flag("--seal-plaintext", seal_plaintext,
                   "seal values in clear too (once, after upgrading from a berthd without "
                   "encryption at rest); otherwise they are counted and stay refused");
  CLI11_PARSE(app, argc, argv);
  const berth::server::DaemonOptions options = flags.Options();
  if (*rotate) {
    auto rotated = berth::server::RotateKeys(options, seal_plaintext);
    if (!rotated) {
      std::fprintf(stderr, "berthd rotate-keys: %s\n", rotated.error().ToString().c_str());
      return 1;
    }
    std::fputs(rotated->Summary().c_str(), stdout);
    return 0;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  auto ran =
      berth::server::RunDaemon(options, g_stop, [](const std::string& url, const auto& token) {
        std::printf("berthd serving %s (admin token: %s)\n", url.c_str(), token.c_str());
        std::fflush(stdout);
      });
  if (!ran) {
    std::fprintf(stderr, "berthd: %s\n", ran.error().ToString().c_str());
    return 1;
  }
  return 0;
}
