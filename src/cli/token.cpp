#include "cli/token.h"

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/body.h"
#include "cli/cli.h"
#include "core/duration.h"
#include "core/http_url.h"

namespace berth::cli {
namespace {

using nlohmann::json;

std::string Text(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string joined;
    for (const json& item : value) joined += (joined.empty() ? "" : ",") + Text(item);
    return joined;
  }
  return value.dump();
}

}  // namespace

int CreateToken(const Globals& g, const TokenOptions& options) {
  json body = {{"scopes", options.scopes}};
  if (!options.expires.empty()) {
    auto lifetime = ParseDuration(options.expires);
    if (!lifetime) {
      std::fprintf(stderr, "error: --expires: %s\n", lifetime.error().message.c_str());
      return kExitUsage;
    }
    // The server names the field if it is out of its range.
    body["expires_in_seconds"] =
        std::chrono::duration_cast<std::chrono::seconds>(*lifetime).count();
  }
  if (!options.description.empty()) body["description"] = options.description;
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto answered = Send(*c, "POST", "/tokens", body.dump());
  if (answered.exit_code != kExitOk) return answered.exit_code;
  const json& answer = answered.body;
  if (g.output == "json") {
    std::printf("%s\n", answer.dump(2).c_str());
  } else if (g.output == "yaml") {
    std::printf("%s", JsonToYaml(answer).c_str());
  } else {
    std::fprintf(stderr, "token %s, scopes %s, expires %s; its secret is shown this once:\n",
                 Text(answer["id"]).c_str(), Text(answer["scopes"]).c_str(),
                 answer["expires_at"].is_null() ? "never" : Text(answer["expires_at"]).c_str());
    std::printf("%s\n", Text(answer["secret"]).c_str());
  }
  return kExitOk;
}

int ListTokens(const Globals& g) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto answered = Send(*c, "GET", "/tokens");
  if (answered.exit_code != kExitOk) return answered.exit_code;
  const json& answer = answered.body;
  if (g.output == "json") {
    std::printf("%s\n", answer.dump(2).c_str());
    return kExitOk;
  }
  if (g.output == "yaml") {
    std::printf("%s", JsonToYaml(answer).c_str());
    return kExitOk;
  }
  std::printf("%-26s %-28s %-25s %-26s %s\n", "ID", "SCOPES", "EXPIRES", "CREATED BY",
              "DESCRIPTION");
  for (const json& t : answer.value("items", json::array())) {
    std::printf("%-26s %-28s %-25s %-26s %s\n", Text(t["id"]).c_str(), Text(t["scopes"]).c_str(),
                Text(t["expires_at"]).c_str(), Text(t["created_by"]).c_str(),
                Text(t["description"]).c_str());
  }
  return kExitOk;
}

int RevokeToken(const Globals& g, const std::string& id) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  if (int code = Send(*c, "DELETE", "/tokens/" + id).exit_code; code != kExitOk) return code;
  std::printf("revoked token %s\n", id.c_str());
  return kExitOk;
}

int PrintLoginLink(const Globals& g) {
  auto c = Reach(g);
  if (!c) return kExitUnavailable;
  auto answered = Send(*c, "POST", "/login-codes");
  if (answered.exit_code != kExitOk) return answered.exit_code;
  std::string url = c->url;
  while (url.ends_with('/')) url.pop_back();
  // After '#': the browser never sends the code to any server, so no proxy or log keeps it.
  std::printf("%s/ui/login#org=%s&code=%s\n", url.c_str(), PercentEncoded(c->org).c_str(),
              PercentEncoded(Text(answered.body["code"])).c_str());
  std::fprintf(stderr, "one use, until %s: open it in a browser to log in to the dashboard\n",
               Text(answered.body["expires_at"]).c_str());
  return kExitOk;
}

}  // namespace berth::cli
