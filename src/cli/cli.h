// `berth`, the CLI (docs/cli.md): berth up, create/get/update/delete for runners, runner
// rules, projects, environment types and environments, refresh-runner, and deployments
// (deploy, logs, approve, cancel, outputs).
#pragma once

#include "core/exit_codes.h"

namespace berth::cli {

// Exit codes scripts can rely on (core/exit_codes.h has what each means).
inline constexpr int kExitOk = exit_code::kOk;
inline constexpr int kExitRefused = exit_code::kCliRefused;
inline constexpr int kExitUsage = exit_code::kCliUsage;
inline constexpr int kExitNotFound = exit_code::kCliNotFound;
inline constexpr int kExitConflict = exit_code::kCliConflict;
inline constexpr int kExitUnavailable = exit_code::kCliUnavailable;
inline constexpr int kExitDeploymentFailed = exit_code::kCliDeploymentFailed;
inline constexpr int kExitCheckFailed = exit_code::kCliCheckFailed;

int Main(int argc, char** argv);

}  // namespace berth::cli
