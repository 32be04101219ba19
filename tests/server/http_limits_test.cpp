// What berthd's HTTP server refuses before any handler runs, on a real socket: a request its
// admission refuses on the headers alone (the body never read), a body over its route's limit
// (413), a long target (414) or header block (431), a connection beyond the cap
// for its client (503), and a client that sends half a request and waits (let go).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "sys/fd.h"

namespace berth::net {
namespace {

class HttpLimits : public ::testing::Test {
 protected:
  void Start(const ServerOptions& options) {
    auto server = StartHttpServer(options, [](const ServerRequest& r) {
      ServerResponse response;
      response.body = "got " + std::to_string(r.body.size());
      return response;
    });
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
  }
  HttpResponse Send(const std::string& method, const std::string& target, std::string body = "",
                    std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpRequest request{.method = method,
                        .url = "http://127.0.0.1:" + std::to_string(server_->Port()) + target,
                        .headers = std::move(headers),
                        .body = std::move(body)};
    auto response = client_->Send(request);
    EXPECT_TRUE(response) << response.error().ToString();
    return response ? *response : HttpResponse{};
  }
  // A plain TCP connection to the server; reads give up after 60 s (the test's own guard).
  sys::Fd Connect() {
    sys::Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(server_->Port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd.Get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    timeval guard{.tv_sec = 60, .tv_usec = 0};
    setsockopt(fd.Get(), SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    return fd;
  }
  // What the server sends until it closes the connection; nullopt if it never did.
  static std::optional<std::string> ReadToClose(const sys::Fd& fd) {
    std::string got;
    char buffer[4096];
    for (;;) {
      ssize_t n = read(fd.Get(), buffer, sizeof buffer);
      if (n == 0) return got;
      if (n < 0) return errno == ECONNRESET ? std::optional(got) : std::nullopt;
      got.append(buffer, static_cast<size_t>(n));
    }
  }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpClient> client_ = MakeCurlHttpClient();
};

TEST_F(HttpLimits, EachRouteHasItsOwnBodyLimitAndTheAnswerNamesIt) {
  Start({.admit = [](const ServerRequest& head) {
    return Admission{.body_limit =
                         head.method == "PUT" && head.target.starts_with("/files/") ? 1000u : 10u};
  }});
  auto small = Send("POST", "/api", std::string(100, 'x'));
  EXPECT_EQ(small.status, 413);
  EXPECT_NE(small.body.find("larger than 10 bytes"), std::string::npos) << small.body;
  EXPECT_EQ(Send("POST", "/api", std::string(10, 'x')).body, "got 10");
  EXPECT_EQ(Send("PUT", "/files/state", std::string(100, 'x')).body, "got 100");
  EXPECT_EQ(Send("PUT", "/files/state", std::string(1001, 'x')).status, 413);
}

// A request with a body is admitted (or not) on its headers alone: a refusal is answered before
// a byte of the body is sent, the connection closes, and the handler never runs. A request
// without a body is not asked about.
TEST_F(HttpLimits, ARefusalIsAnsweredOnTheHeadersBeforeTheBodyIsRead) {
  std::atomic<int> asked = 0;
  Start({.admit = [&asked](const ServerRequest& head) {
    ++asked;
    Admission admission{.body_limit = size_t{1} << 30};
    if (head.headers.count("authorization") == 0 && head.body.empty())
      admission.refusal = ServerResponse{.status = 401, .body = "who are you"};
    return admission;
  }});
  sys::Fd stranger = Connect();
  std::string head = "PUT /files/big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n";
  ASSERT_EQ(write(stranger.Get(), head.data(), head.size()), static_cast<ssize_t>(head.size()));
  auto refused = ReadToClose(stranger);
  ASSERT_TRUE(refused) << "the server waited for the body";
  EXPECT_TRUE(refused->starts_with("HTTP/1.1 401")) << *refused;
  EXPECT_NE(refused->find("who are you"), std::string::npos) << *refused;
  EXPECT_EQ(refused->find("got "), std::string::npos) << "the handler ran";
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(Send("PUT", "/files/big", "abc", {{"Authorization", "Bearer t"}}).body, "got 3");
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(Send("GET", "/files/big").body, "got 0");
  EXPECT_EQ(asked, 2) << "asked about a request without a body";
}

TEST_F(HttpLimits, ALongTargetGets414AndLongHeadersGet431) {
  Start({.max_target_bytes = 100, .max_header_bytes = 2000});
  EXPECT_EQ(Send("GET", "/" + std::string(99, 'a')).body, "got 0");
  EXPECT_EQ(Send("GET", "/" + std::string(200, 'a')).status, 414);
  EXPECT_EQ(Send("GET", "/?q=" + std::string(200, 'a')).status, 414);
  EXPECT_EQ(Send("GET", "/", "", {{"X-Filler", std::string(3000, 'h')}}).status, 431);
  EXPECT_EQ(Send("GET", "/").status, 200);  // and the server goes on
}

TEST_F(HttpLimits, AConnectionBeyondItsClientsCapIsRefusedAndTheOthersGoOn) {
  Start({.max_connections_per_client = 2});
  sys::Fd first = Connect(), second = Connect();
  sys::Fd third = Connect();
  auto refused = ReadToClose(third);
  ASSERT_TRUE(refused);
  EXPECT_TRUE(refused->starts_with("HTTP/1.1 503")) << *refused;
  // The two held connections still work.
  std::string request = "GET /held HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(first.Get(), request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  auto served = ReadToClose(first);
  ASSERT_TRUE(served);
  EXPECT_TRUE(served->starts_with("HTTP/1.1 200")) << *served;
  // Their places come back as they close.
  second = sys::Fd();
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {
    status = Send("GET", "/again").status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);
}

// Slowloris: headers sent, half a body, then nothing. The server closes the connection once
// read_timeout has passed instead of holding it (and its place) for ever.
TEST_F(HttpLimits, AClientThatSendsHalfARequestAndWaitsIsLetGo) {
  Start({.read_timeout = std::chrono::seconds(1)});
  sys::Fd slow = Connect();
  std::string half = "POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc";
  ASSERT_EQ(write(slow.Get(), half.data(), half.size()), static_cast<ssize_t>(half.size()));
  EXPECT_TRUE(ReadToClose(slow)) << "the server held a stalled request past its read timeout";
  sys::Fd idle = Connect();  // an idle keep-alive connection too
  EXPECT_TRUE(ReadToClose(idle));
}

}  // namespace
}  // namespace berth::net
