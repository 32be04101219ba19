// HttpServer on Boost.Beast and Asio coroutines. Each connection is one coroutine on the I/O
// threads; each request's handler hops to the worker pool and back, so a slow store call
// never stalls other connections.
#include <array>
#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <map>
#include <mutex>
#include <thread>

#include "net/http_server.h"

namespace berth::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
// How long a streamed response waits for more when nobody says there is (its wake_on_change).
constexpr std::chrono::seconds kStreamRecheck{1};

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
        // Out of descriptors: accepting again at once would spin. Wait for some to close.
        if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
          asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(100));
          co_await pause.async_wait(kAsTuple);
        }
        continue;
      }
      boost::system::error_code peer_ec;
      auto peer = socket.remote_endpoint(peer_ec);
      auto slot = TakeSlot(peer_ec ? std::string() : peer.address().to_string());
      auto strand = socket.get_executor();
      if (!slot) {
        asio::co_spawn(strand, Refuse(std::move(socket)), asio::detached);
      } else if (ssl_) {
        asio::co_spawn(strand, ServeTls(std::move(socket), std::move(slot)), asio::detached);
      } else {
        asio::co_spawn(strand, Serve(beast::tcp_stream(std::move(socket)), std::move(slot)),
                       asio::detached);
      }
    }
  }

  // A connection's place among those open: given back when the connection ends.
  using Slot = std::shared_ptr<void>;
  Slot TakeSlot(const std::string& client) {
    std::lock_guard lock(connections_mutex_);
    int& from_client = per_client_[client];
    if (open_connections_ >= options_.max_connections ||
        from_client >= options_.max_connections_per_client) {
      if (from_client == 0) per_client_.erase(client);
      return nullptr;
    }
    ++open_connections_;
    ++from_client;
    // Not null (a null Slot is a refusal); the deleter gives the place back.
    return Slot(static_cast<void*>(this), [this, client](void*) {
      std::lock_guard giving_back(connections_mutex_);
      --open_connections_;
      if (--per_client_[client] == 0) per_client_.erase(client);
    });
  }

  // Too many connections: a short answer, written without reading the request (TLS or not).
  asio::awaitable<void> Refuse(tcp::socket socket) {
    static constexpr std::string_view kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
        "Connection: close\r\n\r\n";
    beast::tcp_stream stream(std::move(socket));
    stream.expires_after(std::chrono::seconds(5));
    co_await asio::async_write(stream, asio::buffer(kBusy), kAsTuple);
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  asio::awaitable<void> ServeTls(tcp::socket socket, Slot slot) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *ssl_);
    beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kAsTuple);
    if (ec) co_return;
    co_await Serve(std::move(stream), std::move(slot));
  }

  template <class Stream>
  // slot is held for the connection's life: its place is given back when this returns.
  asio::awaitable<void> Serve(Stream stream, [[maybe_unused]] Slot slot) {
    beast::flat_buffer buffer;
    std::string remote;
    {
      boost::system::error_code ec;
      auto peer = beast::get_lowest_layer(stream).socket().remote_endpoint(ec);
      if (!ec) remote = peer.address().to_string();
    }
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
      // The route's limit is known once the headers are: none until then (Beast would hold a
      // Content-Length to its default when the headers end).
      parser.body_limit(boost::none);
      beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
      // message by value: the coroutine starts when awaited, after a temporary argument died.
      // NOLINTNEXTLINE(performance-unnecessary-value-param)
      auto refuse = [&](int status, std::string message) -> asio::awaitable<void> {
        auto out = ToBeast(PlainError(status, message), 11, false);
        beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
        co_await http::async_write(stream, out, kAsTuple);
      };
      auto [header_ec, header_bytes] =
          co_await http::async_read_header(stream, buffer, parser, kAsTuple);
      (void)header_bytes;
      if (header_ec == http::error::header_limit) {
        co_await refuse(431, "the request line and headers are larger than " +
                                 std::to_string(options_.max_header_bytes) + " bytes");
        break;
      }
      if (header_ec) break;  // closed, timed out, or not HTTP
      const auto& head = parser.get();
      if (head.target().size() > options_.max_target_bytes) {
        co_await refuse(414, "the request target is longer than " +
                                 std::to_string(options_.max_target_bytes) + " bytes");
        break;
      }
      ServerRequest request;
      request.method = std::string(head.method_string());
      request.target = std::string(head.target());
      for (const auto& field : head) {
        std::string name(field.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        request.headers[name] = std::string(field.value());
      }
      request.remote = remote;
      Admission admission{.body_limit = options_.max_body_bytes};
      const bool has_body = parser.chunked() || parser.content_length().value_or(0) > 0;
      if (options_.admit && has_body) {
        admission = co_await asio::co_spawn(
            workers_,
            [this, &request]() -> asio::awaitable<Admission> {
              try {
                co_return options_.admit(request);
              } catch (const std::exception& e) {
                co_return Admission{.refusal = PlainError(500, "internal error")};
              }
            },
            asio::use_awaitable);
      }
      if (admission.refusal) {
        auto out = ToBeast(std::move(*admission.refusal), head.version(), false);
        beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
        co_await http::async_write(stream, out, kAsTuple);
        break;
      }
      const size_t limit = admission.body_limit;
      auto too_large = [&]() {
        return refuse(413, "the request body is larger than " + std::to_string(limit) +
                               " bytes, this route's limit");
      };
      if (parser.content_length() && *parser.content_length() > limit) {
        co_await too_large();
        break;
      }
      parser.body_limit(limit);  // a chunked body is counted as it comes
      if (limit > (size_t{1} << 20))
        beast::get_lowest_layer(stream).expires_after(options_.body_timeout);
      auto [ec, bytes] = co_await http::async_read(stream, buffer, parser, kAsTuple);
      (void)bytes;
      if (ec == http::error::body_limit) {
        co_await too_large();
        break;
      }
      if (ec) break;  // closed, timed out, or not HTTP
      auto& message = parser.get();
      request.body = std::move(message.body());
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
        co_await WriteStreamed(stream, std::move(response), version);
        break;
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
  // worker pool), then the last chunk. Between chunks that are not there yet it waits on a
  // timer, holding no thread, while a read watches the connection: a client that sends
  // anything or goes away ends the response. False when the client went away; the connection
  // is not kept for another request either way (the watching read may have taken its bytes).
  template <class Stream>
  asio::awaitable<bool> WriteStreamed(Stream& stream, ServerResponse response, unsigned version) {
    http::response<http::empty_body> head{static_cast<http::status>(response.status), version};
    head.set(http::field::server, "berthd");
    for (const auto& [name, value] : response.headers) head.set(name, value);
    head.chunked(true);
    http::response_serializer<http::empty_body> serializer{head};
    // Each write must finish within read_timeout: a client that stops reading is let go.
    beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
    auto [head_ec, head_bytes] = co_await http::async_write_header(stream, serializer, kAsTuple);
    (void)head_bytes;
    if (head_ec) co_return false;
    beast::get_lowest_layer(stream).expires_never();
    auto executor = co_await asio::this_coro::executor;
    auto watch = std::make_shared<ClientWatch>(executor);
    asio::co_spawn(executor, WatchClient(stream, watch), asio::detached);
    auto next = std::move(response.next_chunk);
    auto wake_on_change = std::move(response.wake_on_change);
    std::optional<std::string> chunk = std::move(response.body);
    bool asked = false;  // the body is what there was; next_chunk is asked at once
    while (chunk && !stopped_ && !watch->gone) {
      if (!chunk->empty()) {
        beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
        auto [ec, n] =
            co_await asio::async_write(stream, http::make_chunk(asio::buffer(*chunk)), kAsTuple);
        (void)n;
        if (ec) break;
        // The timeout is for writes: the watching read goes on as long as the stream.
        beast::get_lowest_layer(stream).expires_never();
      } else if (asked) {
        watch->wait.expires_after(kStreamRecheck);
        if (wake_on_change) {
          std::weak_ptr<ClientWatch> weak = watch;
          wake_on_change([weak, executor] {
            asio::post(executor, [weak] {
              if (auto alive = weak.lock()) alive->wait.cancel();
            });
          });
        }
        co_await watch->wait.async_wait(kAsTuple);
        if (watch->gone) break;
      }
      asked = true;
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
    bool whole = !chunk && !watch->gone;
    if (whole) {
      beast::get_lowest_layer(stream).expires_after(options_.read_timeout);
      auto [last_ec, last_n] =
          co_await asio::async_write(stream, http::make_chunk_last(), kAsTuple);
      (void)last_n;
      whole = !last_ec;
    }
    // The watching read ends before the stream can go.
    boost::system::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream).socket().cancel(ignored);
    if (!watch->finished) {
      watch->done.expires_after(std::chrono::hours(1));
      co_await watch->done.async_wait(kAsTuple);
    }
    co_return whole;
  }

  // What a streamed response and the read that watches its connection share, on its strand.
  struct ClientWatch {
    explicit ClientWatch(const asio::any_io_executor& executor) : wait(executor), done(executor) {}
    asio::steady_timer wait;  // between chunks; cancelled to wake the stream
    asio::steady_timer done;  // cancelled when the read has finished
    bool gone = false;        // the client sent something or went away
    bool finished = false;    // the read has returned
  };

  template <class Stream>
  asio::awaitable<void> WatchClient(Stream& stream, std::shared_ptr<ClientWatch> watch) {
    std::array<char, 1> byte{};
    co_await stream.async_read_some(asio::buffer(byte), kAsTuple);
    watch->gone = true;
    watch->finished = true;
    watch->wait.cancel();
    watch->done.cancel();
  }

  ServerOptions options_;
  Handler handler_;
  // Before io_: connections the context still holds give their places back as it goes.
  std::mutex connections_mutex_;
  int open_connections_ = 0;
  std::map<std::string, int> per_client_;
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
