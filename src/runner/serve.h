// `runner serve`: berth-controller's runs over gRPC with mutual TLS (docs/runner.md, "serve"),
// until SIGTERM or SIGINT.
#pragma once

#include "runner/options.h"

namespace berth::runner {

// Serves until a stop signal; returns the process's exit code. Says where it listens on stderr
// ("runner serve: listening on HOST:PORT"), the port chosen when --listen gave 0.
int Serve(const ServeOptions& options);

}  // namespace berth::runner
