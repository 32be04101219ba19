// The exit codes berth's programs promise scripts: the `berth` CLI (docs/cli.md) and the
// runner (docs/runner.md). The error tables (core/error.cpp, core/run_result.cpp) say which
// kind of error ends in which code.
#pragma once

namespace berth::exit_code {

inline constexpr int kOk = 0;

// berth, the CLI.
inline constexpr int kCliRefused = 1;           // the server refused the request (4xx)
inline constexpr int kCliUsage = 2;             // bad flags or arguments
inline constexpr int kCliNotFound = 3;          // 404
inline constexpr int kCliConflict = 4;          // 409 or 412
inline constexpr int kCliUnavailable = 5;       // no answer, or a server error (5xx)
inline constexpr int kCliDeploymentFailed = 6;  // a deployment ended failed or cancelled
inline constexpr int kCliCheckFailed = 7;       // a check found what a run would fail on

// The runner.
inline constexpr int kRunnerFailed = 1;           // the operation failed: see the result
inline constexpr int kRunnerUsage = 2;            // usage or flags
inline constexpr int kRunnerResultUnwritten = 3;  // the result could not be written

}  // namespace berth::exit_code
