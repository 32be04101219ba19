// The runner's gateway client and log shipper against a real HTTP server that is down (503)
// for a while: requests are retried until it answers, every chunk arrives once and in order,
// and a refusal (403) is final at once.
#include "runner/gateway_client.h"

#include <gtest/gtest.h>

#include <map>

#include "core/mutex.h"
#include "net/http_server.h"
#include "runner/log_shipper.h"

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

}  // namespace
}  // namespace berth::runner
