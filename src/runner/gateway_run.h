// A run in gateway mode (--gateway, --run-id): before the run, its rendered inputs, module
// bundle (unless --module names one) and approved plan are fetched into a staging folder and
// the run's flags point at them; during it, every log line is shipped; after it, the plan file
// and outputs (sensitive values sealed to the log recipient) are uploaded and the whole result
// posted. The token comes from --token-file or the file BERTH_TOKEN_FILE names, and never
// reaches the log.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/run_result.h"
#include "runner/apply_handover.h"
#include "runner/gateway_client.h"
#include "runner/log_shipper.h"
#include "runner/log_sink.h"
#include "runner/options.h"

namespace berth::runner {

class GatewayRun {
 public:
  GatewayRun(const RunOptions& options, const std::vector<std::string>& environment);
  ~GatewayRun();
  GatewayRun(const GatewayRun&) = delete;
  GatewayRun& operator=(const GatewayRun&) = delete;

  // Tees log into the gateway and fetches the run's inputs; options then name the staged files.
  Result<void> Prepare(RunOptions& options, LogSink& log);
  // Uploads a state TF could not persist (the artifact "state"), before anything else can go
  // wrong.
  void KeepState(const std::filesystem::path& errored);
  // Uploads the artifacts, the rest of the log and the result. Failures are written to stderr:
  // the launcher still reads the local result.
  void Deliver(const RunOptions& options, const RunResult& result);
  // After a plan's Deliver (--await-apply): the apply berthd hands this runner, if it does.
  std::optional<ApplyHandover> AwaitApply(Duration wait, int signal_fd, LogSink& log);

 private:
  Result<void> Stage(const std::string& what, const std::filesystem::path& file);
  // The file as artifact name, when it exists; a failure is written to stderr. With a
  // recipient, the file is outputs and its sensitive values are sealed to it.
  void Upload(const std::string& name, const std::filesystem::path& file,
              const std::string& recipient = "");

  std::string token_;
  std::filesystem::path staging_;
  GatewayClient client_;
  std::unique_ptr<LogShipper> shipper_;
};

}  // namespace berth::runner
