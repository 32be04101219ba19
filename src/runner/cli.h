// The runner's command line (docs/runner.md, "Command line"): parsed into one command.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "runner/log_sink.h"
#include "runner/options.h"

namespace berth::runner {

struct CopyCommand {
  std::vector<std::string> arguments;  // exactly one (the destination) is valid
};
struct VersionCommand {
  bool raw = false;      // --version=raw: full build information as JSON
  bool verbose = false;  // the `version` subcommand: name, version and build information
};
struct RunCommand {
  RunOptions options;
};
// OpenTofu's external key provider: serves the state key in key_file (runner/state_encryption.h).
struct KeyProviderCommand {
  std::string key_file;
};
struct ServeCommand {
  ServeOptions options;
};
struct UsageCommand {};  // a bare `runner`

struct CommandLine {
  LoggingOptions logging;
  std::variant<UsageCommand, CopyCommand, VersionCommand, RunCommand, KeyProviderCommand,
               ServeCommand>
      command;
  // Set when the flags are invalid (exit 2). For `run`, the options parsed so far still say
  // where to write the result.
  std::optional<Error> error;
};

CommandLine ParseCommandLine(const std::vector<std::string>& args);

// "home:PATH" or "workspace:PATH" (file left empty): where --file-mapping puts a file.
Result<FileMapping> ParseMappingTarget(std::string_view target);

// How the log sink writes, from the logging flags (which ParseCommandLine has validated).
LogSinkOptions SinkOptions(const LoggingOptions& logging);

std::string_view Usage();

}  // namespace berth::runner
