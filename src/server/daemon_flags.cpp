#include "server/daemon_flags.h"

#include "core/duration.h"
#include "core/http_url.h"

namespace berth::server {

DaemonFlags::DaemonFlags(CLI::App& app, DaemonCommand command)
    : run_deadline_seconds_(options_.run_deadline.count()),
      replica_lease_seconds_(options_.replica_lease.count()),
      command_(command) {
  options_.runner_binary = FindRunnerBesideSelf();
  options_.embedded = command == DaemonCommand::kBerthUp;
  AddShared(app);
  if (command == DaemonCommand::kBerthd) AddBerthdOnly(app);
}

void DaemonFlags::AddShared(CLI::App& app) {
  app.add_option("--listen", options_.listen, "ADDRESS:PORT to serve the API on");
  app.add_option("--providers", options_.providers,
                 "a provider mirror folder local runs install providers from, offline")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--insecure-local-runners", options_.insecure_local_runners,
               "run local runs without their sandbox, as the user berthd runs as (logged at "
               "every start)");
  runner_uid_ = app.add_option("--local-runner-uid", options_.local_runner_uid,
                               "as root: the first of the users local runs drop to, one per "
                               "parallel run (none may be a user this machine has or another "
                               "berthd's; default: the first such range from 60100)")
                    ->check(CLI::Range(1, 65534));
  app.add_flag("--reset-admin-token", options_.reset_admin_token,
               "revoke the admin token in the data folder and write a new one there (one lost "
               "or leaked)");
  app.add_option("--log-format", log_format_, "the log on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("-v,--v", options_.verbosity,
                 "log verbosity: 1 adds runner traffic and every transition")
      ->check(CLI::NonNegativeNumber);
}

void DaemonFlags::AddBerthdOnly(CLI::App& app) {
  app.add_option("--data-dir", data_dir_, "folder for the SQLite database and the admin token");
  // From the environment too: a URL with a password belongs in a Secret, not in argv.
  app.add_option("--database", options_.database, "postgres://... (default: SQLite in --data-dir)")
      ->envname("BERTH_DATABASE");
  app.add_option("--encryption-key-file", options_.encryption_key_file,
                 "the keys that seal secrets in the database (default: DATA_DIR/encryption-keys, "
                 "made at the first start; berthds sharing a database share it)");
  app.add_option("--tls-cert", options_.tls_cert_file, "PEM certificate chain for HTTPS");
  app.add_option("--tls-key", options_.tls_key_file, "PEM private key for HTTPS");
  app.add_option("--runner-binary", options_.runner_binary,
                 "the runner program for local runs (default: the one beside berthd)");
  app.add_option("--admin-token-file", options_.admin_token_file,
                 "the admin token's secret (at least 32 characters), made so at every start "
                 "(a mounted Secret: change it and restart to rotate); none in --data-dir")
      ->excludes("--reset-admin-token");
  app.add_option("--max-parallel-runs", options_.max_parallel_runs,
                 "local runs at once; the others wait their turn")
      ->check(CLI::PositiveNumber);
  app.add_option("--run-deadline-seconds", run_deadline_seconds_,
                 "a run not ended this long after it started is stopped and its deployment "
                 "failed")
      ->check(CLI::PositiveNumber);
  app.add_option("--replica-lease-seconds", replica_lease_seconds_,
                 "with several berthd on one database: how long this one's runs stay its own "
                 "after it stops renewing its lease (every third of it); then another takes "
                 "them over")
      ->check(CLI::Range(int64_t{3}, int64_t{3600}));
  app.add_option("--keep-deployments-for", keep_deployments_for_,
                 "ended deployments, their logs and artifacts are removed this long after they "
                 "ended (a duration: 720h, 90m); the newest of each environment stays")
      ->check([](const std::string& text) -> std::string {
        auto parsed = ParseDuration(text);
        if (!parsed) return "--keep-deployments-for: " + parsed.error().message;
        if (*parsed < std::chrono::seconds(1)) return "--keep-deployments-for: at least 1s";
        return "";
      });
  auto* kubernetes = app.add_flag(
      "--kubernetes", options_.kubernetes,
      "launch runners of the kubernetes types as Pods or Jobs (KUBECONFIG or in-cluster, "
      "and the KUBERNETES_* settings)");
  app.add_option("--clusters-dir", options_.clusters_dir,
                 "how organizations reach other clusters: DIR/ORG/kubeconfig, whose contexts a "
                 "kubernetes runner's cluster names, and DIR/ORG/FILE token files")
      ->check(CLI::ExistingDirectory)
      ->needs(kubernetes);  // without it, no runner reaches any cluster: refused, not ignored
  app.add_option("--public-url", options_.public_url,
                 "berthd's URL as people reach it, when a proxy in front of it serves TLS "
                 "(https://berth.example.com): the dashboard's session cookie is then Secure")
      ->check([](const std::string& text) -> std::string {
        auto url = HttpUrl::Parse(text);
        if (!url) return "--public-url: " + url.error().message;
        return "";
      });
  app.add_option("--advertise-url", options_.advertise_url,
                 "berthd's URL as runners reach it (default: the listen address)");
  app.add_option("--rate-limit", options_.rate_limit,
                 "API requests a second per token, bursts of twice that (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--allow-plain-http", options_.allow_plain_http,
               "serve plain HTTP on a non-loopback address (not recommended)");
}

DaemonOptions DaemonFlags::Options() const {
  DaemonOptions options = options_;
  options.local_runner_uid_exact = runner_uid_->count() > 0;
  sys::Logger::ParseFormat(log_format_, &options.log_format);  // checked by the flag
  if (command_ == DaemonCommand::kBerthd) options.data_dir = data_dir_;
  options.run_deadline = std::chrono::seconds(run_deadline_seconds_);
  options.replica_lease = std::chrono::seconds(replica_lease_seconds_);
  options.keep_deployments_for = std::chrono::duration_cast<std::chrono::milliseconds>(
      *ParseDuration(keep_deployments_for_));  // checked by the flag
  return options;
}

}  // namespace berth::server
