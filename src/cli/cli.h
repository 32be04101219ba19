// `berth`, the CLI (docs/cli.md): berth up, create/get/update/delete for runners, runner
// rules, projects, environment types and environments, refresh-runner, and deployments
// (deploy, logs, approve, cancel, outputs).
#pragma once

namespace berth::cli {

// Exit codes scripts can rely on.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;           // the server refused the request (4xx)
inline constexpr int kExitUsage = 2;             // bad flags or arguments
inline constexpr int kExitNotFound = 3;          // 404
inline constexpr int kExitConflict = 4;          // 409 or 412
inline constexpr int kExitUnavailable = 5;       // no answer, or a server error (5xx)
inline constexpr int kExitDeploymentFailed = 6;  // a deployment ended failed or cancelled

int Main(int argc, char** argv);

}  // namespace berth::cli
