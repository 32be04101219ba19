#include "server/api/session_credentials.h"

#include "crypto/digest.h"

namespace berth::server {

std::string CsrfToken(std::string_view session_secret) {
  return crypto::Sha256Hex("berth-csrf:" + std::string(session_secret));
}

std::string CookieValue(std::string_view header, std::string_view name) {
  // "a=1; b=2" (RFC 6265 section 4.2.1): pairs split by ";", spaces around them.
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    while (pair.starts_with(' ')) pair.remove_prefix(1);
    while (pair.ends_with(' ')) pair.remove_suffix(1);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name)
      return std::string(pair.substr(eq + 1));
  }
  return {};
}

ApiSecret ApiSecretOf(const std::map<std::string, std::string>& headers) {
  auto header = headers.find("authorization");
  if (header != headers.end())
    return {header->second.starts_with("Bearer ") ? header->second.substr(7) : "", false};
  auto cookies = headers.find("cookie");
  if (cookies == headers.end()) return {};
  std::string secret = CookieValue(cookies->second, kSessionCookie);
  return {secret, !secret.empty()};
}

}  // namespace berth::server
