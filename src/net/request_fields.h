// What handlers read off a request beside its route: its credential and its query's values.
#pragma once

#include <string>

#include "net/http_server.h"

namespace berth::net {

// "Authorization: Bearer TOKEN", or the password of "Basic base64(user:TOKEN)" (what tofu's
// HTTP backend sends from TF_HTTP_PASSWORD); empty when neither.
std::string RequestCredential(const ServerRequest& request);

// The value of name in the target's query, as sent (not decoded); empty when absent.
std::string QueryValue(const std::string& target, const std::string& name);

}  // namespace berth::net
