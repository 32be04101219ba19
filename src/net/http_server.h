// berth's HTTP server interface: a handler is given a request and returns a response; the
// server (Boost.Beast with C++20 coroutines, no thread per connection) owns sockets, TLS,
// limits and timeouts. Only http_server_beast.cpp includes Beast.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::net {

struct ServerRequest {
  std::string method;
  std::string target;                          // path and query, as sent
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote;  // peer address
};

struct ServerResponse {
  int status = 200;
  std::map<std::string, std::string> headers;
  std::string body;
  // A response that goes on (a followed log): after body, the server sends what next_chunk
  // returns, chunk by chunk, until it returns nullopt or the client goes. It runs on the worker
  // pool and must not wait: an empty chunk says "nothing yet", and the server then waits
  // without holding a thread, for a second at most, or until wake_on_change calls the wake it
  // is given (once, from any thread), and asks again. Meanwhile it watches the connection: a
  // client that goes away ends the response at once.
  std::function<std::optional<std::string>()> next_chunk;
  std::function<void(std::function<void()> wake)> wake_on_change;
  // Not sent: the route pattern that served it ("/orgs/{org}/deployments/{id}"), for metrics.
  std::string route;
};

using Handler = std::function<ServerResponse(const ServerRequest&)>;

struct Admission {
  size_t body_limit = 0;
  std::optional<ServerResponse> refusal;  // set: sent instead, the body unread
};

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: the kernel picks one (Port() says which)
  // TLS from PEM files; both empty: plain HTTP, which is refused on a non-loopback address
  // unless allow_plain_http.
  std::string tls_cert_file;
  std::string tls_key_file;
  bool allow_plain_http = false;
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  // What is decided of a request that has a body once its headers are in, before a byte of the
  // body is read (on the worker pool: it may consult the store): the body's limit (a state or a
  // bundle may be larger than an API body), or a refusal sent instead, after which the
  // connection is closed, its body never read (an unauthenticated caller cannot make the server
  // hold megabytes). It is given the request without its body. null: max_body_bytes for all.
  std::function<Admission(const ServerRequest& head)> admit;
  size_t max_target_bytes = size_t{8} << 10;   // a longer path and query gets 414
  size_t max_header_bytes = size_t{16} << 10;  // the request line and headers together; 431
  // A request's headers (and a body up to 1 MiB) must arrive within read_timeout, a larger body
  // within body_timeout; an idle keep-alive connection is closed after read_timeout, and so is
  // one whose client stops reading a response (a followed log included).
  std::chrono::seconds read_timeout{30};
  std::chrono::seconds body_timeout{300};
  // Connections open at once, in total and from one client address; beyond, a new connection
  // is answered 503 and closed.
  int max_connections = 4096;
  int max_connections_per_client = 256;
  int io_threads = 2;      // socket work
  int worker_threads = 8;  // handlers (they may block on the store)
};

class HttpServer {
 public:
  virtual ~HttpServer() = default;
  // The bound port: known from the bind on, before anything is served.
  virtual int Port() const = 0;
  // Starts accepting; the handler runs on the worker threads. Once only.
  virtual void Serve(Handler handler) = 0;
  // Stops accepting, closes connections, and joins every thread.
  virtual void Stop() = 0;
};

// Binds the listening socket (connections wait in its backlog until Serve), so that a program
// can learn its own URL before it builds what serves it.
Result<std::unique_ptr<HttpServer>> BindHttpServer(const ServerOptions& options);
// Binds and serves at once.
Result<std::unique_ptr<HttpServer>> StartHttpServer(const ServerOptions& options, Handler handler);

}  // namespace berth::net
