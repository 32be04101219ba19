// berth-controller as a command: its flags (registered on the caller's CLI::App) and its run,
// so that the program's main only parses and calls Run.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <string>

#include "controller/controller_loop.h"
#include "controller/state_server.h"
#include "kube/kube_api.h"

namespace berth::controller {

class ControllerCommand {
 public:
  explicit ControllerCommand(CLI::App& app);
  ControllerCommand(const ControllerCommand&) = delete;
  ControllerCommand& operator=(const ControllerCommand&) = delete;

  // Reconciles until a signal of stop arrives (the caller blocked them before any thread
  // started); what went wrong at start-up, logged, is exit status 1.
  int Run(const sigset_t& stop);

 private:
  std::string ns_ = "berth-system";
  ControllerOptions loop_options_;
  int runner_creation_timeout_ = 120;
  int destroy_timeout_ = 900;
  kube::KubeClientOptions client_options_{.user_agent = "berth-controller"};
  std::string metrics_address_ = "0.0.0.0";
  int metrics_port_ = 8080;
  bool leader_elect_ = true;
  StateServerOptions state_options_;
};

}  // namespace berth::controller
