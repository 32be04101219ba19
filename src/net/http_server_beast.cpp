// HttpServer on Boost.Beast and Asio coroutines. Each connection is one coroutine on the I/O
// threads; each request's handler hops to the worker pool and back, so a slow store call
// never stalls other connections.
#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <thread>

#include "net/http_server.h"

namespace berth::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);

bool IsLoopback(const std::string& address) {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  return !ec && ip.is_loopback();
}

http::response<http::string_body> ToBeast(ServerResponse response, unsigned version,
                                          bool keep_alive) {
  http::response<http::string_body> out{static_cast<http::status>(response.status), version};
  out.set(http::field::server, "berthd");
  for (const auto& [name, value] : response.headers) out.set(name, value);
  out.body() = std::move(response.body);
  out.keep_alive(keep_alive);
  out.prepare_payload();
  return out;
}

ServerResponse PlainError(int status, std::string message) {
  ServerResponse r;
  r.status = status;
  r.headers["Content-Type"] = "application/json";
  r.body = "{\"error\":{\"message\":\"" + std::move(message) + "\"}}";
  return r;
}

class BeastServer final : public HttpServer {
 public:
  explicit BeastServer(ServerOptions options)
      : options_(std::move(options)),
        workers_(static_cast<size_t>(options_.worker_threads)),
        acceptor_(asio::make_strand(io_)) {}

  ~BeastServer() override { Stop(); }

  Result<void> Bind() {
    bool tls = !options_.tls_cert_file.empty() || !options_.tls_key_file.empty();
    if (!tls && !options_.allow_plain_http && !IsLoopback(options_.address)) {
      return MakeError(ErrorKind::kInvalidArgument,
                       "--listen: plain HTTP is served on loopback only; give a TLS certificate "
                       "and key, or allow plain HTTP explicitly",
                       options_.address);
    }
    if (tls) {
      ssl_.emplace(asio::ssl::context::tls_server);
      ssl_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
      boost::system::error_code ec;
      ssl_->use_certificate_chain_file(options_.tls_cert_file, ec);
      if (!ec) ssl_->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem, ec);
      if (ec) {
        return MakeError(ErrorKind::kInvalidArgument, "TLS: " + ec.message(),
                         options_.tls_cert_file);
      }
    }
    boost::system::error_code ec;
    auto address = asio::ip::make_address(options_.address, ec);
    if (ec)
      return MakeError(ErrorKind::kInvalidArgument, "--listen: not an IP address",
                       options_.address);
    tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return MakeError(ErrorKind::kUnavailable, "cannot listen: " + ec.message(),
                       options_.address + ":" + std::to_string(options_.port));
    }
    port_ = acceptor_.local_endpoint().port();
    return {};
  }

  void Serve(Handler handler) override {
    handler_ = std::move(handler);
    // Several I/O threads run the context: the acceptor, and each connection, has its own
    // strand, so that no two threads touch one socket at once (Stop closes the acceptor on
    // its strand too).
    asio::co_spawn(acceptor_.get_executor(), Accept(), asio::detached);
    for (int i = 0; i < options_.io_threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  int Port() const override { return port_; }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    asio::post(acceptor_.get_executor(), [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
    });
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    workers_.join();
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(io_), kAsTuple);
      if (ec) {
        if (!acceptor_.is_open()) co_return;
        continue;
      }
      auto strand = socket.get_executor();
      if (ssl_) {
        asio::co_spawn(strand, ServeTls(std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(strand, Serve(beast::tcp_stream(std::move(socket))), asio::detached);
      }
    }
  }

  asio::awaitable<void> ServeTls(tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *ssl_);
    beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kAsTuple);
    if (ec) co_return;
    co_await Serve(std::move(stream));
  }

  template <class Stream>
  asio::awaitable<void> Serve(Stream stream) {
    beast::flat_buffer buffer;
    std::string remote;
    {
      boost::system::error_code ec;
      auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(ec);
      if (!ec) remote = peer.address().to_string();
    }
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options_.max_body_bytes);
      parser.header_limit(16 * 1024);
      beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
      auto [ec, bytes] = co_await http::async_read(stream, buffer, parser, kAsTuple);
      (void)bytes;
      if (ec == http::error::body_limit) {
        auto out = ToBeast(PlainError(413, "the request body is larger than " +
                                               std::to_string(options_.max_body_bytes) + " bytes"),
                           11, false);
        co_await http::async_write(stream, out, kAsTuple);
        break;
      }
      if (ec == http::error::header_limit) {
        auto out = ToBeast(PlainError(431, "the request headers are too large"), 11, false);
        co_await http::async_write(stream, out, kAsTuple);
        break;
      }
      if (ec) break;  // closed, timed out, or not HTTP
      auto& message = parser.get();
      ServerRequest request;
      request.method = std::string(message.method_string());
      request.target = std::string(message.target());
      for (const auto& field : message) {
        std::string name(field.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        request.headers[name] = std::string(field.value());
      }
      request.body = std::move(message.body());
      request.remote = remote;
      bool keep_alive = message.keep_alive();
      unsigned version = message.version();

      // The handler may block (the store): run it on the worker pool, then come back.
      ServerResponse response = co_await asio::co_spawn(
          workers_,
          [this, &request]() -> asio::awaitable<ServerResponse> {
            try {
              co_return handler_(request);
            } catch (const std::exception& e) {
              co_return PlainError(500, "internal error");
            }
          },
          asio::use_awaitable);
      if (response.next_chunk) {
        bool ok = co_await WriteStreamed(stream, std::move(response), version);
        if (!ok || !keep_alive) break;
        continue;
      }
      auto out = ToBeast(std::move(response), version, keep_alive);
      beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
      auto [write_ec, written] = co_await http::async_write(stream, out, kAsTuple);
      (void)written;
      if (write_ec || !keep_alive) break;
    }
    boost::system::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // A chunked response: the header and body, then each chunk next_chunk gives (fetched on the
  // worker pool), then the last chunk. False when the client went away.
  template <class Stream>
  asio::awaitable<bool> WriteStreamed(Stream& stream, ServerResponse response, unsigned version) {
    http::response<http::empty_body> head{static_cast<http::status>(response.status), version};
    head.set(http::field::server, "berthd");
    for (const auto& [name, value] : response.headers) head.set(name, value);
    head.chunked(true);
    http::response_serializer<http::empty_body> serializer{head};
    beast::get_lowest_layer(stream).expires_never();
    auto [head_ec, head_bytes] = co_await http::async_write_header(stream, serializer, kAsTuple);
    (void)head_bytes;
    if (head_ec) co_return false;
    auto next = std::move(response.next_chunk);
    std::optional<std::string> chunk = std::move(response.body);
    while (chunk && !stopped_) {
      if (!chunk->empty()) {
        auto [ec, n] =
            co_await asio::async_write(stream, http::make_chunk(asio::buffer(*chunk)), kAsTuple);
        (void)n;
        if (ec) co_return false;
      }
      chunk = co_await asio::co_spawn(
          workers_,
          [&next]() -> asio::awaitable<std::optional<std::string>> {
            try {
              co_return next();
            } catch (const std::exception&) {
              co_return std::nullopt;
            }
          },
          asio::use_awaitable);
    }
    auto [last_ec, last_n] = co_await asio::async_write(stream, http::make_chunk_last(), kAsTuple);
    (void)last_n;
    co_return !last_ec;
  }

  ServerOptions options_;
  Handler handler_;
  asio::io_context io_;
  asio::thread_pool workers_;
  tcp::acceptor acceptor_;
  std::optional<asio::ssl::context> ssl_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  int port_ = 0;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> BindHttpServer(const ServerOptions& options) {
  auto server = std::make_unique<BeastServer>(options);
  if (auto bound = server->Bind(); !bound) return bound.error();
  return std::unique_ptr<HttpServer>(std::move(server));
}

Result<std::unique_ptr<HttpServer>> StartHttpServer(const ServerOptions& options, Handler handler) {
  auto server = BindHttpServer(options);
  if (server) (*server)->Serve(std::move(handler));
  return server;
}

}  // namespace berth::net
