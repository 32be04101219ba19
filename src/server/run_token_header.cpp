#include "server/run_token_header.h"

#include "core/base64.h"

namespace berth::server {

std::string RunTokenOf(const net::ServerRequest& request) {
  auto it = request.headers.find("authorization");
  if (it == request.headers.end()) return {};
  const std::string& value = it->second;
  if (value.starts_with("Bearer ")) return value.substr(7);
  if (value.starts_with("Basic ")) {
    auto decoded = Base64Decode(value.substr(6));
    if (!decoded) return {};
    auto colon = decoded->find(':');
    return colon == std::string::npos ? std::string() : decoded->substr(colon + 1);
  }
  return {};
}

}  // namespace berth::server
