// `runner run`: prepares the work folder, drives tofu/terraform through init and the
// operation, and fills in the result document (docs/runner.md).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/run_result.h"
#include "runner/log_sink.h"
#include "runner/options.h"
#include "runner/run_events.h"

namespace berth::runner {

struct RunContext {
  std::vector<std::string> environment;  // the runner's own environment, NAME=VALUE
  LogSink* log = nullptr;                // required
  RunEvents* events = nullptr;           // required (NoRunEvents when there is no --event-object)
  int signal_fd = -1;                    // readable when SIGTERM or SIGINT arrived
  // Told where a state that could not be persisted is kept (errored.tfstate), at once.
  std::function<void(const std::filesystem::path&)> keep_state;
};

RunResult ExecuteRun(const RunOptions& options, const RunContext& context);

// Writes the document in place (the termination log is a bind-mounted file: no rename).
// Returns false when it could not be written.
bool WriteResult(const std::string& path, const RunResult& result, size_t max_bytes);

}  // namespace berth::runner
