// berth-controller: reconciles Terraform objects (docs/controller.md) until SIGTERM or SIGINT.
// Its flags and its run are controller/controller_command.h's.
#include <signal.h>

#include <CLI/CLI.hpp>

#include "controller/controller_command.h"

int main(int argc, char** argv) {
  CLI::App app{"berth-controller: runs Terraform objects in their own runner Pods"};
  berth::controller::ControllerCommand command(app);
  CLI11_PARSE(app, argc, argv);
  // Before any thread starts: the stop signals are read by the command, not delivered to a
  // thread.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return command.Run(stop);
}
