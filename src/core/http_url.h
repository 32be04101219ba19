// An http(s) URL's parts, as far as berth needs them: where it connects (scheme, host, port)
// and the rest.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

struct HttpUrl {
  std::string scheme;  // http | https
  std::string host;    // a name or an address; an IPv6 address without its brackets
  int port = 0;        // the scheme's default when the URL names none
  std::string rest;    // the path and what follows it; may be empty

  // kInvalidArgument unless text is http(s)://HOST[:PORT][/...], with a port from 1 to 65535.
  static Result<HttpUrl> Parse(std::string_view text);
};

// For a query, a form body or a fragment: RFC 3986's unreserved characters as they are, every
// other byte %XX.
std::string PercentEncoded(std::string_view text);

}  // namespace berth
