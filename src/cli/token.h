// `berth token create|list|revoke`: API tokens beyond the admin token (an admin's to make);
// `berth ui`: a login link for the dashboard.
#pragma once

#include <string>
#include <vector>

#include "cli/connection.h"

namespace berth::cli {

struct TokenOptions {
  std::vector<std::string> scopes;  // read, deploy, approve, configure, admin
  std::string expires;              // a duration such as 720h; empty: never
  std::string description;
};

// Prints the new token's secret alone on stdout (so `$(berth token create ...)` holds it) and
// what it is on stderr; -o json or yaml prints the whole answer. The secret is shown once.
int CreateToken(const Globals& g, const TokenOptions& options);
int ListTokens(const Globals& g);
int RevokeToken(const Globals& g, const std::string& id);
// `berth ui`: prints a one-time dashboard login link (a login code of this CLI's token, good
// for two minutes and one session) on stdout, and opens nothing.
int PrintLoginLink(const Globals& g);

}  // namespace berth::cli
