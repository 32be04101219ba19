// What `runner run` is asked to do, after its flags are parsed (docs/runner.md, "run").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/duration.h"

namespace berth::runner {

// The logging flags every Kubernetes component registers, as parsed; ValidateLogging says
// whether they go together, as component-base's validation does.
struct LoggingOptions {
  int verbosity = 0;
  std::vector<std::pair<std::string, int>> vmodule;  // pattern=N
  std::string format = "text";                       // text | json
  Duration flush_frequency = std::chrono::seconds(5);
  bool text_split_stream = false;
  bool json_split_stream = false;
  size_t text_info_buffer_bytes = 0;
  size_t json_info_buffer_bytes = 0;
  // The one logging gate the runner has: its alpha options (split streams, info buffers).
  bool logging_alpha_options = false;
};

// A file placed before TF starts (berth-controller's spec.fileMappings).
struct FileMapping {
  std::string location;  // "home" or "workspace" (the folder TF runs in)
  std::string path;      // relative to it, never leaving it
  std::string file;      // what to copy there
};

struct RunOptions {
  // what to run
  std::string op;
  std::string module;  // default /berth/module, or the gateway's bundle in gateway mode
  std::string path;
  std::string ns = "default";
  std::string name = "run";
  std::string workdir;  // default /tmp/<namespace>-<name>/<path>
  // The workdir holds an earlier run's layout of this module, initialised: its .terraform and
  // lock file are kept, the module is laid out afresh, and init does not run.
  bool prepared = false;
  // the binary
  std::string binary = "auto";
  std::string bin;
  std::string providers;
  // inputs
  std::string config;
  std::string inputs_hash;
  std::vector<std::string> backend_config;
  // TF's CLI configuration (TF_CLI_CONFIG_FILE): replaces the one --providers writes.
  std::string cli_config;
  std::vector<FileMapping> file_mappings;
  // runtime
  // false: TF takes no state lock (-lock=false): the one who launched the run holds it.
  bool lock = true;
  Duration lock_timeout = std::chrono::minutes(5);
  Duration stop_timeout = std::chrono::minutes(1);
  std::optional<Duration> timeout;
  std::string force_unlock;
  // approval and plan checks
  std::string plan_file;
  // Where a run that reads a plan writes its readable change list (tf/plan_changes.h).
  std::string changes_file;
  std::string approved_plan;
  // The approved plan file's SHA-256: an apply of exactly those bytes needs no show -json.
  std::string approved_plan_sha256;
  std::string plan_key_file;
  // OpenTofu encrypts state and plans with the key in this file (runner/state_encryption.h);
  // --state-encryption: the key is the gateway's state-key.
  std::string state_key_file;
  std::string state_token_file;  // the HTTP backend's password; default: BERTH_TOKEN_FILE's
  // The run's OpenID Connect ID token, from berthd's gateway when its environment asks for one
  // (docs/oidc.md), and the variables that point TF's providers at it; no flag: only the
  // gateway's run sets them.
  std::string id_token_file;
  std::vector<std::string> id_token_env;
  bool state_encryption = false;
  // Every log chunk shipped to the gateway is encrypted to this age recipient (age1...) first.
  std::string log_recipient;
  bool allow_destroy = false;
  bool plan_destroy = false;  // plan: a destroy plan (for a destroy that needs approval)
  // Gateway plan runs: after the result, wait this long for the apply to be handed to this
  // runner (runner/apply_handover.h); 0: end with the plan.
  Duration await_apply{0};
  // restore and events
  std::string restore_from;
  std::string event_object;
  // The backend the runner declares (the module need not): "http" is berthd's own, to which
  // tofu gets the run's token (BERTH_TOKEN_FILE) as TF_HTTP_PASSWORD; kubernetes, s3, gcs and
  // azurerm are configured by --backend-config.
  std::string state_backend;
  // Gateway mode: the run's inputs, module bundle and approved plan come from berthd's runner
  // gateway, and its log, artifacts and result go there (the result is still written locally).
  std::string gateway;
  std::string token_file;  // default: the file BERTH_TOKEN_FILE names
  std::string run_id;
  // A Unix socket that alone reaches berthd (the run's network is cut): berthd_relay.h.
  std::string berthd_relay;
  std::string job_name;
  // output
  std::string outputs;
  std::string image;
  std::string result = "/dev/termination-log";
  size_t result_max_bytes = 4096;
};

// What `runner serve` is asked to do (docs/runner.md, "serve"): berth-controller's runs, one
// at a time, over gRPC with mutual TLS.
struct ServeOptions {
  std::string listen = "0.0.0.0:30000";  // HOST:PORT; port 0 picks a free one
  std::string tls_cert;                  // the Pod's certificate (PEM), issued by the controller
  std::string tls_key;
  std::string client_ca;  // the controller's CA: only certificates it issued connect
  // The common name a client's certificate must carry: the runner's own certificate comes from
  // the same CA, so without this a module could reach another runner Pod with it.
  std::string client_name = "berth-controller";
  size_t max_file_bytes = size_t{1} << 30;  // per file a run is sent (the source, a plan, ...)
  std::string spool = "/tmp/berth-serve";   // where a run's files wait for it
};

}  // namespace berth::runner
