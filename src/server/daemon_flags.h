// berthd's flags, defined once for the two commands that run it: `berthd` takes every one;
// `berth up` (the embedded default: SQLite in the data folder, local runners, no cluster)
// takes those that mean something there, with the same names, checks and help.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "server/daemon.h"

namespace berth::server {

enum class DaemonCommand { kBerthd, kBerthUp };

class DaemonFlags {
 public:
  // Registers command's flags on app; what they set is Options() once app has parsed.
  DaemonFlags(CLI::App& app, DaemonCommand command);
  DaemonFlags(const DaemonFlags&) = delete;
  DaemonFlags& operator=(const DaemonFlags&) = delete;

  // The options the parsed flags say (their values were checked as they were parsed). For
  // `berth up`, data_dir is the caller's (the CLI's --data-dir).
  DaemonOptions Options() const;

 private:
  void AddShared(CLI::App& app);
  void AddBerthdOnly(CLI::App& app);

  DaemonOptions options_;
  std::string data_dir_ = "/var/lib/berth";
  std::string log_format_ = "text";
  int64_t run_deadline_seconds_;
  int64_t replica_lease_seconds_;
  std::string keep_deployments_for_ = "2160h";
  CLI::Option* runner_uid_ = nullptr;
  const DaemonCommand command_;
};

}  // namespace berth::server
