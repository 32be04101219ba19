// The runner's gateway client and log shipper against a real HTTP server that is down (503)
// for a while: requests are retried until it answers, every chunk arrives once and in order,
// and a refusal (403) is final at once. A runner kept for its apply asks until it is handed it,
// told to go, stopped, or its wait ends.
#include "runner/gateway_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/mutex.h"
#include "net/http_server.h"
#include "runner/apply_handover.h"
#include "runner/log_shipper.h"
#include "sys/fd.h"

namespace berth::runner {
namespace {

class FlakyGateway {
 public:
  explicit FlakyGateway(int failures) : failures_left_(failures) {
    auto server =
        net::StartHttpServer({}, [this](const net::ServerRequest& r) { return Handle(r); });
    EXPECT_TRUE(server);
    server_ = std::move(*server);
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->Port()); }
  std::map<std::string, std::string> Chunks() {
    MutexLock lock(mutex_);
    return chunks_;
  }
  int Requests() {
    MutexLock lock(mutex_);
    return requests_;
  }

 private:
  net::ServerResponse Handle(const net::ServerRequest& r) {
    MutexLock lock(mutex_);
    ++requests_;
    if (r.headers.at("authorization") != "Bearer t") return {.status = 403, .body = "not yours"};
    if (failures_left_ > 0) {
      --failures_left_;
      return {.status = 503, .body = "restarting"};
    }
    chunks_[r.target.substr(r.target.find("seq=") + 4)] = r.body;
    return {.status = 200, .body = "{}"};
  }

  Mutex mutex_;
  int failures_left_ GUARDED_BY(mutex_);
  int requests_ GUARDED_BY(mutex_) = 0;
  std::map<std::string, std::string> chunks_ GUARDED_BY(mutex_);
  std::unique_ptr<net::HttpServer> server_;
};

GatewayOptions Options(const std::string& url, const std::string& token) {
  return {.url = url,
          .run_id = "r1",
          .token = token,
          .retry_for = std::chrono::seconds(20),
          .first_pause = std::chrono::milliseconds(10),
          .max_pause = std::chrono::milliseconds(50)};
}

TEST(GatewayClient, ALogSentWhileTheGatewayIsDownArrivesWholeOnceAndInOrder) {
  FlakyGateway gateway(8);
  GatewayClient client(Options(gateway.Url(), "t"), net::MakeOpenSslHttpClient());
  LogShipper shipper(client, std::chrono::milliseconds(20));
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    std::string line = "[apply] line " + std::to_string(i);
    shipper.Line(line);
    expected += line + "\n";
  }
  ASSERT_TRUE(shipper.Close());
  std::string received;
  auto chunks = gateway.Chunks();
  for (size_t seq = 1; seq <= chunks.size(); ++seq) received += chunks.at(std::to_string(seq));
  EXPECT_EQ(received, expected);
  EXPECT_GT(gateway.Requests(), static_cast<int>(chunks.size()));  // it did retry
}

TEST(GatewayClient, ARefusalIsFinalAndAnUnreachableGatewayIsGivenUpAfterTheBudget) {
  FlakyGateway gateway(0);
  GatewayClient refused(Options(gateway.Url(), "someone else's"), net::MakeOpenSslHttpClient());
  auto sent = refused.AppendLog(1, "x\n");
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_EQ(gateway.Requests(), 1);

  auto options = Options("http://127.0.0.1:1", "t");
  options.retry_for = std::chrono::milliseconds(200);
  GatewayClient nowhere(options, net::MakeOpenSslHttpClient());
  auto fetched = nowhere.Fetch("inputs");
  ASSERT_FALSE(fetched);
  EXPECT_EQ(fetched.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(fetched.error().message.find("unreachable"), std::string::npos);
}

// A plan run's runner kept for its apply (--await-apply) against a gateway that answers /next
// with a wait a given number of times, then with its last answer.
class ApplyGateway {
 public:
  ApplyGateway(int waits, net::ServerResponse last) : waits_left_(waits), last_(std::move(last)) {
    auto server =
        net::StartHttpServer({}, [this](const net::ServerRequest& r) { return Handle(r); });
    EXPECT_TRUE(server);
    server_ = std::move(*server);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->Port()); }
  int Asks() {
    MutexLock lock(mutex_);
    return asks_;
  }

 private:
  net::ServerResponse Handle(const net::ServerRequest& r) {
    MutexLock lock(mutex_);
    if (r.target != "/runs/v1/r1/next") return {.status = 404, .body = "no such route"};
    ++asks_;
    if (waits_left_ != 0) {
      if (waits_left_ > 0) --waits_left_;
      return {.status = 200, .body = R"({"wait": true})"};
    }
    return last_;
  }

  Mutex mutex_;
  int waits_left_ GUARDED_BY(mutex_);  // -1: always
  net::ServerResponse last_;
  int asks_ GUARDED_BY(mutex_) = 0;
  std::unique_ptr<net::HttpServer> server_;
};

// The answer a kept runner waits for: the apply run it is to be.
net::ServerResponse Handed() {
  return {.status = 200,
          .body = nlohmann::json{{"op", "apply"},
                                 {"run_id", "r1-apply"},
                                 {"token", "t2"},
                                 {"approved_plan", "sha256:" + std::string(64, 'a')},
                                 {"approved_plan_sha256", std::string(64, 'b')}}
                      .dump()};
}

class AwaitApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int ends[2];
    ASSERT_EQ(pipe2(ends, O_CLOEXEC), 0);
    stop_read_ = sys::Fd(ends[0]);
    stop_write_ = sys::Fd(ends[1]);
  }
  std::optional<ApplyHandover> Await(ApplyGateway& gateway, Duration wait) {
    GatewayClient client(Options(gateway.Url(), "t"), net::MakeOpenSslHttpClient());
    return AwaitApply(client, wait, std::chrono::milliseconds(20), stop_read_.Get(), log_);
  }

  // Readable once a byte is written to its other end: SIGTERM, as the runner's signalfd has it.
  sys::Fd stop_read_, stop_write_;
  sys::Fd null_{open("/dev/null", O_WRONLY | O_CLOEXEC)};
  LogSink log_{null_.Get(), null_.Get(), SystemClock::Instance()};
};

TEST_F(AwaitApplyTest, ItAsksUntilTheApplyIsHandedToIt) {
  ApplyGateway gateway(3, Handed());
  auto handed = Await(gateway, std::chrono::minutes(10));
  ASSERT_TRUE(handed);
  EXPECT_EQ(handed->run_id, "r1-apply");
  EXPECT_EQ(handed->token, "t2");
  EXPECT_EQ(gateway.Asks(), 4);
}

TEST_F(AwaitApplyTest, ARefusalAStopOrTheEndOfItsWaitEndsIt) {
  ApplyGateway gone(1, {.status = 410, .body = R"({"error": {"message": "cancelled"}})"});
  EXPECT_FALSE(Await(gone, std::chrono::minutes(10)));
  EXPECT_EQ(gone.Asks(), 2);  // the refusal is final: not asked again

  ApplyGateway waiting(-1, Handed());
  ASSERT_EQ(write(stop_write_.Get(), "x", 1), 1);
  EXPECT_FALSE(Await(waiting, std::chrono::minutes(10)));
  EXPECT_EQ(waiting.Asks(), 1);

  // No stop this time: a gateway that only ever says wait is left when the wait ends.
  char byte = 0;
  ASSERT_EQ(read(stop_read_.Get(), &byte, 1), 1);
  ApplyGateway forever(-1, Handed());
  EXPECT_FALSE(Await(forever, std::chrono::milliseconds(100)));

  ApplyGateway forged(0, {.status = 200, .body = R"({"op": "apply", "run_id": "../x"})"});
  EXPECT_FALSE(Await(forged, std::chrono::minutes(10)));
  EXPECT_EQ(forged.Asks(), 1);
}

// The runner's own HTTP client against a peer that answers one request with status_line.
Result<net::HttpResponse> AnsweredWith(const std::string& status_line) {
  sys::Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{.sin_family = AF_INET};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  EXPECT_EQ(bind(listener.Get(), reinterpret_cast<sockaddr*>(&address), length), 0);
  EXPECT_EQ(listen(listener.Get(), 1), 0);
  EXPECT_EQ(getsockname(listener.Get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  std::thread peer([&] {
    sys::Fd connection(accept4(listener.Get(), nullptr, nullptr, SOCK_CLOEXEC));
    std::array<char, 4096> request{};
    EXPECT_GT(read(connection.Get(), request.data(), request.size()), 0);
    const std::string answer = status_line + "\r\nContent-Length: 2\r\n\r\nok";
    EXPECT_EQ(write(connection.Get(), answer.data(), answer.size()),
              static_cast<ssize_t>(answer.size()));
  });
  auto response = net::MakeOpenSslHttpClient()->Send(
      {.url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/"});
  peer.join();
  return response;
}

TEST(OpenSslHttpClient, AStatusThatIsNotThreeDigitsIsNoResponse) {
  auto fine = AnsweredWith("HTTP/1.1 204 No Content");
  ASSERT_TRUE(fine) << fine.error().ToString();
  EXPECT_EQ(fine->status, 204);
  for (const char* hostile : {"HTTP/1.1 2x0 OK", "HTTP/1.1 OK", "HTTP/1.1  200 OK"}) {
    auto refused = AnsweredWith(hostile);
    ASSERT_FALSE(refused) << hostile << " read as " << refused->status;
    EXPECT_NE(refused.error().message.find("malformed HTTP status line"), std::string::npos)
        << refused.error().ToString();
  }
}

}  // namespace
}  // namespace berth::runner
