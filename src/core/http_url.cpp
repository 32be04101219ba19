#include "core/http_url.h"

#include <cctype>

#include "core/decimal.h"

namespace berth {

Result<HttpUrl> HttpUrl::Parse(std::string_view text) {
  auto invalid = [text](const std::string& rule) {
    return MakeError(ErrorKind::kInvalidArgument,
                     "\"" + std::string(text) + "\" is not an http(s) URL: " + rule);
  };
  HttpUrl url;
  size_t scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) return invalid("no scheme");
  url.scheme = std::string(text.substr(0, scheme_end));
  if (url.scheme != "http" && url.scheme != "https") return invalid("the scheme is not http(s)");
  std::string_view authority = text.substr(scheme_end + 3);
  size_t rest = authority.find_first_of("/?#");
  if (rest != std::string_view::npos) {
    url.rest = std::string(authority.substr(rest));
    authority = authority.substr(0, rest);
  }
  if (authority.find('@') != std::string_view::npos) return invalid("it holds credentials");
  std::string_view port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid("an unclosed [");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return invalid("text after ]");
    if (!after.empty()) port = after.substr(1);
  } else {
    size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url.host.empty()) return invalid("no host");
  url.port = url.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    auto number = ParseDecimal<int>(port);
    if (!number || *number < 1 || *number > 65535)
      return invalid("the port is not a number from 1 to 65535");
    url.port = *number;
  }
  return url;
}

std::string PercentEncoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char raw : text) {
    const auto byte = static_cast<unsigned char>(raw);
    if (std::isalnum(byte) || raw == '-' || raw == '.' || raw == '_' || raw == '~') {
      out += raw;
    } else {
      out += {'%', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  return out;
}

}  // namespace berth
