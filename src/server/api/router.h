// Routes "/orgs/{org}/runners/{id}" to handlers, with path parameters and the query string
// decoded. No match is 404; a path that exists for other methods is 405 with Allow.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "net/http_server.h"

namespace berth::server {

struct RouteRequest {
  const net::ServerRequest& http;
  std::string path;
  std::map<std::string, std::string> params;  // from {name} segments
  std::map<std::string, std::string> query;
};

using RouteHandler = std::function<net::ServerResponse(const RouteRequest&)>;

class Router {
 public:
  void Add(std::string method, std::string pattern, RouteHandler handler);
  net::ServerResponse Dispatch(const net::ServerRequest& request) const;
  // Every "METHOD pattern" registered, for the OpenAPI check.
  std::vector<std::string> Routes() const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
};

// Percent-decoding (RFC 3986 section 2.1); false on a malformed escape.
bool PercentDecode(std::string_view in, std::string& out);

net::ServerResponse JsonResponse(int status, const std::string& body);
// {"error": {"kind", "message", "fields": [{"path", "rule"}]}} with the status of its kind.
net::ServerResponse ErrorResponse(const Error& error);
net::ServerResponse ErrorResponse(int status, std::string_view kind, const std::string& message);

}  // namespace berth::server
