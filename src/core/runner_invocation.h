// One `runner run` command line, typed (docs/runner.md, "run"): the dispatcher fills what the
// run is, each launcher adds only where it runs (the placement fields), and Args() renders the
// flags in this one place. A test holds Args() to the runner's own flag parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth {

struct RunnerInvocation {
  // What the run is.
  std::string op;       // plan, apply, destroy, ...
  std::string gateway;  // berthd's URL: gateway mode (with run_id)
  std::string run_id;
  std::string inputs_hash;
  std::string state_backend;  // http | kubernetes | s3 | gcs | azurerm
  std::vector<std::string> backend_config;
  // false: TF runs with -lock=false, berthd holding the state's lock for the whole run
  bool lock = true;
  std::string providers;  // a provider mirror folder
  std::string module;     // a folder or archive; empty: the gateway's bundle (or the default)
  std::string config;     // a tfvars JSON file; empty: the gateway's inputs
  std::string bin;        // the TF executable; empty: found on PATH
  std::string approved_plan;
  std::string approved_plan_sha256;  // the approved plan file's bytes
  bool plan_destroy = false;
  bool allow_destroy = false;
  bool state_encryption = false;  // the gateway's state-key encrypts state and plans
  std::string log_recipient;      // an age recipient every shipped log chunk is encrypted to
  // A plan run whose runner is kept for the apply: how long it waits for it after the plan.
  int64_t await_apply_seconds = 0;

  // Where it runs: the launcher's.
  std::string ns, name;
  std::string workdir;
  // The work folder holds the plan run's layout of this module, initialised: an approved apply
  // continues there without init (tofu checks the providers against the plan's lock file).
  bool prepared = false;
  std::string result;  // where the result document goes
  std::optional<size_t> result_max_bytes;
  std::string binary;  // auto | tofu | terraform; empty: the runner's default
  std::string image;
  std::string event_object;  // KIND/NAMESPACE/NAME
  std::string berthd_relay;  // a Unix socket: the run's only way to berthd (its network is cut)

  // "run", then a --flag=value for every field that is set, in a fixed order.
  std::vector<std::string> Args() const;
};

}  // namespace berth
