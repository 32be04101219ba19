// berthd as a library: opens the store, makes the first organization, its admin token and the
// run token key on the first start, serves the API, the TF state backend and the runner
// gateway, and dispatches deployments to its launchers (local runners, Kubernetes) until asked
// to stop. apps/berthd and `berth up` both run it.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"
#include "sys/logger.h"

namespace berth::server {

struct DaemonOptions {
  std::filesystem::path data_dir;  // SQLite database, admin token, the URL file
  std::string database;            // empty: sqlite under data_dir; or postgres://...
  // The keys that seal secrets at rest (crypto/key_ring.h); empty: DATA_DIR/encryption-keys,
  // made at the first start. berthds sharing a database must share this file.
  std::filesystem::path encryption_key_file;
  std::string listen = "127.0.0.1:8480";
  std::string tls_cert_file;
  std::string tls_key_file;
  bool allow_plain_http = false;
  double rate_limit = 100;  // requests a second per token (bursts of twice that); 0: off
  // The runner program for local runs; empty: berthd runs no deployments (API only).
  std::filesystem::path runner_binary;
  int max_parallel_runs = 4;
  // Local runs execute in a sandbox (launch/local/sandbox.h); where it cannot be made they are
  // refused, unless this lets them run unsandboxed as berthd's user (logged at every start).
  bool insecure_local_runners = false;
  // A root berthd's local runs drop to this user and the --max-parallel-runs - 1 after it, one
  // per concurrent run; none of them may be a user the machine has or another berthd holds.
  // Unless exact (the operator named it), the first such range from it is taken.
  uid_t local_runner_uid = 60100;
  bool local_runner_uid_exact = false;
  // A provider mirror folder every local run installs providers from, offline.
  std::string providers;
  // Launch runners of the kubernetes types as Pods or Jobs, with the cluster of KUBECONFIG (or
  // the Pod's own service account) and the KUBERNETES_* settings (docs/kubernetes.md).
  bool kubernetes = false;
  // How organizations reach other clusters: a folder each (DIR/ORG) holding its kubeconfig,
  // whose contexts a kubernetes runner's cluster.kubeconfig_context names, and token files,
  // which cluster.auth.token_file names (docs/kubernetes.md, "Other clusters"); empty: none.
  std::filesystem::path clusters_dir;
  // berthd's URL as runners reach it (a Pod cannot use 127.0.0.1); empty: the listen URL.
  std::string advertise_url;
  // berthd's URL as people reach it, when that is not the listen address (a TLS proxy in
  // front): an https one makes the dashboard's session cookie Secure.
  std::string public_url;
  // A run that has not ended this long after it started is stopped and its deployment failed.
  std::chrono::seconds run_deadline{6 * 3600};
  // Several berthd may share one database (each with a data folder of its own): a replica's
  // runs are taken over by another this long after it last renewed its lease.
  std::chrono::seconds replica_lease{15};
  // Ended deployments (their logs, events, artifacts) are removed this long after they ended;
  // the newest ended one of each environment stays (server/retention.h).
  std::chrono::milliseconds keep_deployments_for{std::chrono::hours(90 * 24)};
  // An embedded berthd (`berth up`): one person is both caller and server, so deployments may
  // name module folders on this machine.
  bool embedded = false;
  // Revoke the admin token in the data folder (if the store knows it) and write a new one.
  bool reset_admin_token = false;
  // The admin token's secret is this file's (a mounted Secret), made so at every start; the
  // data folder then holds none.
  std::filesystem::path admin_token_file;
  // berthd's own log on stderr: --log-format=text|json, -v=N.
  sys::Logger::Format log_format = sys::Logger::Format::kText;
  int verbosity = 0;
};

// The files berthd leaves in its data folder for the CLI to find it.
std::filesystem::path AdminTokenPath(const std::filesystem::path& data_dir);
std::filesystem::path UrlFilePath(const std::filesystem::path& data_dir);

// The runner program installed beside the running binary (same folder, or ../runner/runner
// in a build tree); empty when there is none.
std::filesystem::path FindRunnerBesideSelf();

// Serves until stop becomes true. on_ready is called once with the URL and the path of the
// admin token file (written 0600 on the first start only).
Result<void> RunDaemon(const DaemonOptions& options, const std::atomic<bool>& stop,
                       const std::function<void(const std::string& url,
                                                const std::filesystem::path& token)>& on_ready);

// `berthd rotate-keys`: a new key seals from now on, every sealed value (and, with
// seal_plaintext, every one written before encryption at rest) is sealed again with it, bound to
// its row, and the keys nothing uses any more leave the key file. A value a running berthd rewrote
// meanwhile keeps the old keys in the file (run it again once that berthd has restarted).
struct RotationReport {
  std::string old_key, new_key;
  int64_t resealed = 0;
  int64_t left_in_clear = 0;  // not asked to seal them
  bool kept_old_keys = false;
  // What an operator reads: what was sealed, and what is left to do.
  std::string Summary() const;
};
Result<RotationReport> RotateKeys(const DaemonOptions& options, bool seal_plaintext);

}  // namespace berth::server
