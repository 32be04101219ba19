// The run token a runner's request carries: "Authorization: Bearer TOKEN", or the password of
// "Basic base64(user:TOKEN)" (what tofu's HTTP backend sends from TF_HTTP_PASSWORD).
#pragma once

#include <string>

#include "net/http_server.h"

namespace berth::server {

std::string RunTokenOf(const net::ServerRequest& request);

}  // namespace berth::server
