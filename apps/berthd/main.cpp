// berthd: the control plane (docs/api.md).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>

#include "core/duration.h"
#include "core/http_url.h"
#include "server/daemon.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  berth::server::DaemonOptions options;
  std::string data_dir = "/var/lib/berth";
  CLI::App app{"berthd: the berth control plane"};
  app.add_option("--data-dir", data_dir, "folder for the SQLite database and the admin token");
  // From the environment too: a URL with a password belongs in a Secret, not in argv.
  app.add_option("--database", options.database, "postgres://... (default: SQLite in --data-dir)")
      ->envname("BERTH_DATABASE");
  app.add_option("--encryption-key-file", options.encryption_key_file,
                 "the keys that seal secrets in the database (default: DATA_DIR/encryption-keys, "
                 "made at the first start; berthds sharing a database share it)");
  auto* rotate = app.add_subcommand(
      "rotate-keys",
      "seal every secret in the database with a new key and drop the keys nothing uses");
  rotate->fallthrough();
  bool seal_plaintext = false;
  rotate->add_flag("--seal-plaintext", seal_plaintext,
                   "seal values in clear too (once, after upgrading from a berthd without "
                   "encryption at rest); otherwise they are counted and stay refused");
  app.add_option("--listen", options.listen, "ADDRESS:PORT to serve the API on");
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate chain for HTTPS");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key for HTTPS");
  options.runner_binary = berth::server::FindRunnerBesideSelf();
  app.add_option("--runner-binary", options.runner_binary,
                 "the runner program for local runs (default: the one beside berthd)");
  app.add_flag("--insecure-local-runners", options.insecure_local_runners,
               "run local runs without their sandbox, as berthd's user (logged at every start)");
  auto* reset = app.add_flag("--reset-admin-token", options.reset_admin_token,
                             "revoke the admin token in --data-dir and write a new one there "
                             "(one lost or leaked)");
  app.add_option("--admin-token-file", options.admin_token_file,
                 "the admin token's secret (at least 32 characters), made so at every start "
                 "(a mounted Secret: change it and restart to rotate); none in --data-dir")
      ->excludes(reset);
  CLI::Option* runner_uid =
      app.add_option("--local-runner-uid", options.local_runner_uid,
                     "the first of the users a root berthd's local runs drop to, one per "
                     "parallel run (--max-parallel-runs of them; none may be a user this machine "
                     "has or another berthd's; default: the first such range from 60100)")
          ->check(CLI::Range(1, 65534));
  app.add_option("--max-parallel-runs", options.max_parallel_runs,
                 "local runs at once; the others wait their turn")
      ->check(CLI::PositiveNumber);
  int64_t run_deadline_seconds = options.run_deadline.count();
  app.add_option("--run-deadline-seconds", run_deadline_seconds,
                 "a run not ended this long after it started is stopped and its deployment "
                 "failed")
      ->check(CLI::PositiveNumber);
  int64_t replica_lease_seconds = options.replica_lease.count();
  app.add_option("--replica-lease-seconds", replica_lease_seconds,
                 "with several berthd on one database: how long this one's runs stay its own "
                 "after it stops renewing its lease (every third of it); then another takes "
                 "them over")
      ->check(CLI::Range(int64_t{3}, int64_t{3600}));
  std::string keep_deployments_for = "2160h";
  app.add_option("--keep-deployments-for", keep_deployments_for,
                 "ended deployments, their logs and artifacts are removed this long after they "
                 "ended (a duration: 720h, 90m); the newest of each environment stays")
      ->check([](const std::string& text) -> std::string {
        auto parsed = berth::ParseDuration(text);
        if (!parsed) return "--keep-deployments-for: " + parsed.error().message;
        if (*parsed < std::chrono::seconds(1)) return "--keep-deployments-for: at least 1s";
        return "";
      });
  app.add_option("--providers", options.providers,
                 "a provider mirror folder local runs install providers from, offline")
      ->check(CLI::ExistingDirectory);
  auto* kubernetes = app.add_flag(
      "--kubernetes", options.kubernetes,
      "launch runners of the kubernetes types as Pods or Jobs (KUBECONFIG or in-cluster, "
      "and the KUBERNETES_* settings)");
  app.add_option("--clusters-dir", options.clusters_dir,
                 "how organizations reach other clusters: DIR/ORG/kubeconfig, whose contexts a "
                 "kubernetes runner's cluster names, and DIR/ORG/FILE token files")
      ->check(CLI::ExistingDirectory)
      ->needs(kubernetes);  // without it, no runner reaches any cluster: refused, not ignored
  app.add_option("--public-url", options.public_url,
                 "berthd's URL as people reach it, when a proxy in front of it serves TLS "
                 "(https://berth.example.com): the dashboard's session cookie is then Secure")
      ->check([](const std::string& text) -> std::string {
        auto url = berth::HttpUrl::Parse(text);
        if (!url) return "--public-url: " + url.error().message;
        return "";
      });
  app.add_option("--advertise-url", options.advertise_url,
                 "berthd's URL as runners reach it (default: the listen address)");
  app.add_option("--rate-limit", options.rate_limit,
                 "API requests a second per token, bursts of twice that (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--allow-plain-http", options.allow_plain_http,
               "serve plain HTTP on a non-loopback address (not recommended)");
  std::string log_format = "text";
  app.add_option("--log-format", log_format, "the log on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("-v,--v", options.verbosity,
                 "log verbosity: 1 adds runner traffic and every transition")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  options.local_runner_uid_exact = runner_uid->count() > 0;
  berth::sys::Logger::ParseFormat(log_format, &options.log_format);  // checked by the flag
  options.data_dir = data_dir;
  options.run_deadline = std::chrono::seconds(run_deadline_seconds);
  options.replica_lease = std::chrono::seconds(replica_lease_seconds);
  options.keep_deployments_for = std::chrono::duration_cast<std::chrono::milliseconds>(
      *berth::ParseDuration(keep_deployments_for));  // checked by the flag
  if (*rotate) {
    auto rotated = berth::server::RotateKeys(options, seal_plaintext);
    if (!rotated) {
      std::fprintf(stderr, "berthd rotate-keys: %s\n", rotated.error().ToString().c_str());
      return 1;
    }
    std::printf("sealed %lld values with the new key %s (was %s)\n",
                static_cast<long long>(rotated->resealed), rotated->new_key.c_str(),
                rotated->old_key.c_str());
    if (rotated->left_in_clear > 0)
      std::printf(
          "%lld values are in clear and refused when read: if a berthd without encryption at "
          "rest wrote them, run rotate-keys --seal-plaintext\n",
          static_cast<long long>(rotated->left_in_clear));
    if (rotated->kept_old_keys)
      std::printf(
          "a running berthd wrote meanwhile: the old keys stay in the key file; run "
          "rotate-keys again once every berthd has restarted\n");
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
