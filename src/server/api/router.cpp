// Segment-by-segment matching; patterns are few, so a linear scan is fine.
#include "server/api/router.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace berth::server {
namespace {

std::vector<std::string> Split(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 1;  // paths start with '/'
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    parts.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

}  // namespace

bool PercentDecode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
        return false;
      }
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (in[i] == '+') {
      out += ' ';
    } else {
      out += in[i];
    }
  }
  return true;
}

void Router::Add(std::string method, std::string pattern, RouteHandler handler) {
  auto segments = Split(pattern);
  routes_.push_back(
      {std::move(method), std::move(pattern), std::move(segments), std::move(handler)});
}

std::vector<std::string> Router::Routes() const {
  std::vector<std::string> out;
  out.reserve(routes_.size());
  for (const auto& r : routes_) out.push_back(r.method + " " + r.pattern);
  return out;
}

net::ServerResponse Router::Dispatch(const net::ServerRequest& request) const {
  std::string_view target = request.target;
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (raw_path.empty() || raw_path.front() != '/') {
    return ErrorResponse(400, "InvalidArgument", "the request target must be a path");
  }
  std::map<std::string, std::string> query;
  if (q != std::string_view::npos) {
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
      size_t amp = rest.find('&');
      std::string_view pair = rest.substr(0, amp);
      size_t eq = pair.find('=');
      std::string key, value;
      if (!PercentDecode(pair.substr(0, eq), key) ||
          !PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), value)) {
        return ErrorResponse(400, "InvalidArgument", "malformed query string");
      }
      if (!key.empty()) query[key] = value;
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
  }
  auto segments = Split(raw_path);
  std::vector<std::string> allowed;
  for (const auto& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    std::map<std::string, std::string> params;
    bool match = true;
    for (size_t i = 0; i < segments.size() && match; ++i) {
      const auto& want = route.segments[i];
      std::string got;
      if (!PercentDecode(segments[i], got))
        return ErrorResponse(400, "InvalidArgument", "malformed path");
      if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
        if (got.empty()) match = false;
        params[want.substr(1, want.size() - 2)] = got;
      } else if (want != got) {
        match = false;
      }
    }
    if (!match) continue;
    if (route.method != request.method) {
      allowed.push_back(route.method);
      continue;
    }
    RouteRequest r{request, std::string(raw_path), std::move(params), query};
    net::ServerResponse response = route.handler(r);
    response.route = route.pattern;
    return response;
  }
  if (!allowed.empty()) {
    std::string allow;
    for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    auto response = ErrorResponse(405, "MethodNotAllowed", request.method + " is not allowed here");
    response.headers["Allow"] = allow;
    return response;
  }
  return ErrorResponse(404, "NotFound", "no such route: " + std::string(raw_path));
}

net::ServerResponse JsonResponse(int status, const std::string& body) {
  net::ServerResponse r;
  r.status = status;
  r.headers["Content-Type"] = "application/json";
  r.body = body;
  return r;
}

net::ServerResponse ErrorResponse(int status, std::string_view kind, const std::string& message) {
  nlohmann::json doc = {{"error", {{"kind", kind}, {"message", message}}}};
  return JsonResponse(status, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

net::ServerResponse ErrorResponse(const Error& error) {
  nlohmann::json doc = {
      {"error", {{"kind", ErrorKindName(error.kind)}, {"message", error.message}}}};
  if (!error.fields.empty()) {
    auto& fields = doc["error"]["fields"] = nlohmann::json::array();
    for (const auto& f : error.fields) fields.push_back({{"path", f.path}, {"rule", f.rule}});
  }
  return JsonResponse(HttpStatus(error.kind),
                      doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace berth::server
