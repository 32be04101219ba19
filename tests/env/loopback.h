// Helpers for starting servers on loopback: a free port, and waiting until a server answers.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "sys/subprocess.h"

namespace berth::testenv {

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).
Result<int> FreeLoopbackPort();

// Whether ip:port accepts a TCP connection now (a readiness probe).
bool AcceptsTcp(const std::string& ip, int port);

// Polls ready() until it is true, the process ends, or timeout passes. The error names what
// and, if log_path is given, quotes the end of that log.
Result<void> WaitUntilReady(const std::string& what, sys::Subprocess& process,
                            const std::function<bool()>& ready, std::chrono::seconds timeout,
                            const std::string& log_path);

// Starts options' program and waits until GET health_url answers 200 (an https URL's
// certificate is not checked: components serve their health on self-signed ones); the process,
// or why it did not come up (quoting the end of options.output_path).
Result<std::unique_ptr<sys::Subprocess>> StartServing(const std::string& what,
                                                      const sys::SpawnOptions& options,
                                                      const std::string& health_url,
                                                      std::chrono::seconds timeout);

}  // namespace berth::testenv
