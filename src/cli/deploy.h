// The CLI's deployment commands: `berth deploy FOLDER --env E` (bundle the module, queue it,
// follow its log, approve when asked to, print the outcome and the outputs), `berth logs`,
// `berth approve`, `berth cancel`, `berth outputs` and `berth deployment`.
#pragma once

#include <string>
#include <vector>

#include "cli/connection.h"

namespace berth::cli {

struct DeployOptions {
  std::string folder;
  std::string env;
  std::string project = "default";
  std::string env_type = "default";  // of an environment the deploy creates
  std::string op = "apply";
  std::vector<std::string> vars;  // NAME=VALUE (string values)
  std::string var_file;           // a JSON object of variables
  bool plan_only = false;
  bool require_approval = false;
  bool auto_approve = false;  // one run; a plan that waits anyway is approved as printed
  bool allow_destroy = false;
  bool no_wait = false;  // queue it and print its id
};

int Deploy(const Globals& g, const DeployOptions& options);
// identity_file: an age identity that decrypts the chunks runners encrypted (empty: none).
int ShowLogs(const Globals& g, const std::string& id, bool follow,
             const std::string& identity_file = "");
// Every stored chunk of the deployment's log, as stored, to DIR/<position>.age (an encrypted
// one) or .log.
int SaveRawLog(const Globals& g, const std::string& id, const std::string& out_dir);
int Approve(const Globals& g, const std::string& id, const std::string& plan_hash);
int CancelDeployment(const Globals& g, const std::string& id);
// identity_file: an age identity that opens the sensitive values a runner sealed (and asks for
// them); empty: none.
int ShowOutputs(const Globals& g, const std::string& id, bool sensitive,
                const std::string& identity_file = "");
// Prints the deployment, or with timings where its time went (cli/timings.h).
int ShowDeployment(const Globals& g, const std::string& id, bool timings);

}  // namespace berth::cli
