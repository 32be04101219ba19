// A plan run whose runner is kept for its apply (--await-apply): after the plan's result is
// posted, the runner asks berthd's gateway, with the plan run's token, whether the plan was
// approved and handed to it. When it was, it continues as the apply run in the same work
// folder (--prepared: no second init) with the apply run's id and token; when the deployment
// went another way (cancelled, approval timed out, the apply given a runner of its own), when
// the wait runs out or the runner is told to stop, it ends.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/duration.h"
#include "core/error.h"
#include "runner/gateway_client.h"
#include "runner/log_sink.h"
#include "runner/options.h"
#include "sys/files.h"

namespace berth::runner {

// What the gateway hands a kept runner: the apply run it is to be.
struct ApplyHandover {
  std::string op;  // apply or destroy
  std::string run_id;
  std::string token;
  std::string approved_plan;         // the plan's hash, as approved
  std::string approved_plan_sha256;  // the plan file's bytes, as uploaded
};

// The gateway's answer to GET /runs/v1/{plan run}/next: a handover, or nullopt for "not yet"
// ({"wait": true}). Every field is checked: the answer reaches a Pod a module shares.
Result<std::optional<ApplyHandover>> ParseApplyHandover(std::string_view body);

// Asks every poll until a handover comes, the gateway refuses (the deployment went another
// way), the wait ends or signal_fd is readable (SIGTERM: the Pod is being deleted).
std::optional<ApplyHandover> AwaitApply(GatewayClient& gateway, Duration wait, Duration poll,
                                        int signal_fd, LogSink& log);

// The handed token in a file of its own, in a folder only the runner's user reads; both go
// when this does.
struct HandedTokenFile {
  sys::TempDir folder;
  std::filesystem::path path;
};
Result<HandedTokenFile> KeepHandedToken(const std::string& token);

// The apply run's options: the plan run's, as the apply of the handed plan, in the plan run's
// work folder (the token is read from token_file).
RunOptions ContinuedApplyOptions(const RunOptions& plan, const ApplyHandover& handover,
                                 const std::string& token_file);

}  // namespace berth::runner
