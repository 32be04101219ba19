#include "net/request_fields.h"

#include "core/base64.h"

namespace berth::net {

std::string RequestCredential(const ServerRequest& request) {
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

std::string QueryValue(const std::string& target, const std::string& name) {
  auto question = target.find('?');
  if (question == std::string::npos) return {};
  std::string query = target.substr(question + 1);
  for (size_t start = 0; start <= query.size();) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string pair = query.substr(start, end - start);
    if (pair.starts_with(name + "=")) return pair.substr(name.size() + 1);
    start = end + 1;
  }
  return {};
}

}  // namespace berth::net
