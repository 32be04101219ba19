// The TF_* variables a runner's environment may not set: the runner sets them itself (its work
// folder, its non-interactive runs, berth's state backend and encryption) or they would change
// what the run does behind berth's back (TF_CLI_ARGS*: -lock=false, -target, -auto-approve;
// TF_REATTACH_PROVIDERS: providers from elsewhere; TF_LOG_PATH: a log that is never masked).
// Every other TF_* variable (TF_LOG, TF_VAR_*, TF_TOKEN_*, TF_CLI_CONFIG_FILE, ...) reaches TF.
// A runner's pod template that sets one is refused when saved; the runner drops one that
// arrives anyway (from an envFrom source), saying so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace berth {

// Why the variable named name is berth's own; nullopt when it may reach TF.
std::optional<std::string> ReservedTfVariable(std::string_view name);

}  // namespace berth
