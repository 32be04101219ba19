// What protects berthd: per-token rate limits (429 with Retry-After, on a simulated clock),
// TLS from files, and plain HTTP refused off loopback.
#include <gtest/gtest.h>

#include "api_fixture.h"
#include "api_without_runners.h"
#include "core/clock.h"
#include "crypto/x509.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "server/api/rate_limiter.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {
namespace {

using namespace std::chrono_literals;

TEST(RateLimiter, ABurstThenTheRateAndEachKeyOnItsOwn) {
  ManualClock clock;
  RateLimiter limiter(1, 2, clock);
  EXPECT_FALSE(limiter.Take("a"));
  EXPECT_FALSE(limiter.Take("a"));
  auto wait = limiter.Take("a");
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 1s);
  EXPECT_FALSE(limiter.Take("b")) << "another token has its own bucket";
  clock.Advance(1s);
  EXPECT_FALSE(limiter.Take("a"));
  EXPECT_TRUE(limiter.Take("a"));
  clock.Advance(10s);  // refills to the burst, not beyond
  EXPECT_FALSE(limiter.Take("a"));
  EXPECT_FALSE(limiter.Take("a"));
  EXPECT_TRUE(limiter.Take("a"));
}

TEST(RateLimiter, ZeroMeansNoLimit) {
  ManualClock clock;
  RateLimiter limiter(0, 0, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(limiter.Take("a"));
}

TEST(ApiLimits, ATokenOverItsRateGets429WithRetryAfter) {
  auto dir = sys::TempDir::Create("api-limits");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "db").string(), 1);
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->CreateOrganization("acme"));
  auto busy = IssueToken(**store, "acme", "busy");
  auto calm = IssueToken(**store, "acme", "calm");
  ASSERT_TRUE(busy && calm);
  ManualClock clock;
  ApiWithoutRunners api(**store, ApiOptions{.requests_per_second = 1, .burst = 1, .clock = &clock});
  auto get = [&](const std::string& token) {
    return api.Handle({.method = "GET",
                       .target = "/orgs/acme/runners",
                       .headers = {{"authorization", "Bearer " + token}}});
  };
  EXPECT_EQ(get(*busy).status, 200);
  auto limited = get(*busy);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.headers["Retry-After"], "1");
  EXPECT_NE(limited.body.find("ResourceExhausted"), std::string::npos);
  EXPECT_EQ(get(*calm).status, 200);
  clock.Advance(1s);
  EXPECT_EQ(get(*busy).status, 200);
}

TEST(ApiLimits, HostileBodiesGetA400AndBerthdGoesOn) {
  auto dir = sys::TempDir::Create("api-hostile");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "db").string(), 1);
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->CreateOrganization("acme"));
  auto token = IssueToken(**store, "acme", "admin");
  ASSERT_TRUE(token);
  ApiWithoutRunners api(**store);
  auto call = [&](const std::string& method, std::string body) {
    return api.Handle(
        {.method = method,
         .target = "/orgs/acme/runners",
         .headers = {{"authorization", "Bearer " + *token}, {"content-type", "application/json"}},
         .body = std::move(body)});
  };
  // A free-form object a million levels deep: every recursive walk of it would overflow.
  auto deep = call("POST", R"({"id":"deep","runner_configuration":{"type":"local","x":)" +
                               std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}}");
  EXPECT_EQ(deep.status, 400);
  EXPECT_NE(deep.body.find("levels deep"), std::string::npos) << deep.body.substr(0, 400);
  // A name checked by a pattern, megabytes long: matched in linear time, refused by its rule.
  auto long_name = call(
      "POST", R"({"id":"long","runner_configuration":{"type":"kubernetes","job":{"namespace":"ns",)"
              R"("service_account":")" +
                  std::string(1 << 20, 'a') + R"(-"}}})");
  EXPECT_EQ(long_name.status, 400);
  EXPECT_NE(long_name.body.find("$.runner_configuration.job.service_account"), std::string::npos)
      << long_name.body.substr(0, 400);
  EXPECT_EQ(call("GET", "").status, 200) << "berthd answers after both";
}

// A local runner's memory, CPU time or process limit on a berthd without control groups is
// refused when saved, naming each field and why; a disk limit (held without them) is saved.
class RunnerLimitsApi : public ApiFixture {
 protected:
  ApiOptions Options() override { return {.local_limits_refusal = "berthd is not root"}; }
  net::ServerResponse Create(const std::string& id, const std::string& limits) {
    return Call("POST", "/orgs/acme/runners",
                R"({"id":")" + id + R"(","runner_configuration":{"type":"local","limits":)" +
                    limits + R"(},"state_storage_configuration":{"type":"berth"}})");
  }
};

TEST_F(RunnerLimitsApi, LimitsThisBerthdCannotHoldAreRefusedWhenSaved) {
  auto refused = Create("held", R"({"memory":"1Gi","cpu_seconds":60,"disk":"1Gi"})");
  EXPECT_EQ(refused.status, 409) << refused.body;
  for (const char* field : {"limits.memory", "limits.cpu_seconds"})
    EXPECT_NE(refused.body.find(std::string("$.runner_configuration.") + field), std::string::npos)
        << refused.body;
  EXPECT_NE(refused.body.find("berthd is not root"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find("limits.disk"), std::string::npos) << refused.body;
  EXPECT_EQ(Create("disk", R"({"disk":"1Gi"})").status, 201);
  auto bad = Create("bad", R"({"memory":"lots","processes":2})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("$.runner_configuration.limits.memory"), std::string::npos);
  EXPECT_NE(bad.body.find("$.runner_configuration.limits.processes"), std::string::npos);
}

// Without a sandbox, a local run cannot have a network of its own: a runner asking for one is
// refused when saved, not run with the machine's network.
class RunnerNetworkApi : public ApiFixture {
 protected:
  ApiOptions Options() override { return {.local_network_refusal = "no sandbox here"}; }
  net::ServerResponse Create(const std::string& id, const std::string& network) {
    return Call("POST", "/orgs/acme/runners",
                R"({"id":")" + id + R"(","runner_configuration":{"type":"local","network":")" +
                    network + R"("},"state_storage_configuration":{"type":"berth"}})");
  }
};

TEST_F(RunnerNetworkApi, ANetworkCutThisBerthdCannotMakeIsRefusedWhenSaved) {
  auto refused = Create("cut", "berthd_only");
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("$.runner_configuration.network"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("no sandbox here"), std::string::npos) << refused.body;
  EXPECT_EQ(Create("full", "full").status, 201);
  auto bad = Create("bad", "off");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("full, berthd_only"), std::string::npos) << bad.body;
}

// What a run with the machine's network may reach besides berthd is named, from a list; on a
// network of its own (berthd_only) there is nothing to allow, and allowing it is refused
// rather than ignored.
TEST_F(RunnerNetworkApi, NetworkAllowNamesWhatAFullNetworkRunReachesAndNothingElse) {
  auto save = [&](const std::string& id, const std::string& fields) {
    return Call("POST", "/orgs/acme/runners",
                R"({"id":")" + id + R"(","runner_configuration":{"type":"local",)" + fields +
                    R"(},"state_storage_configuration":{"type":"berth"}})");
  };
  EXPECT_EQ(save("open", R"("network_allow":["metadata","loopback"])").status, 201);
  auto unknown = save("unknown", R"("network_allow":["everything"])");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_NE(unknown.body.find("$.runner_configuration.network_allow[0]"), std::string::npos)
      << unknown.body;
  EXPECT_NE(unknown.body.find("metadata, loopback"), std::string::npos) << unknown.body;
  auto cut = save("cut", R"("network":"berthd_only","network_allow":["metadata"])");
  EXPECT_EQ(cut.status, 400) << cut.body;
  EXPECT_NE(cut.body.find("network_allow: only with network: full"), std::string::npos) << cut.body;
  // Found by schemathesis: the rule across the two fields met a network of the wrong type.
  auto mistyped = save("mistyped", R"("network":[null,null],"network_allow":[])");
  EXPECT_EQ(mistyped.status, 400) << mistyped.body;
  EXPECT_NE(mistyped.body.find("$.runner_configuration.network"), std::string::npos)
      << mistyped.body;
}

TEST(HttpServer, ServesTlsFromFilesAndOnlyToClientsThatTrustIt) {
  auto dir = sys::TempDir::Create("tls");
  ASSERT_TRUE(dir);
  auto ca = crypto::CreateCertificateAuthority("berth-test", 1h);
  ASSERT_TRUE(ca);
  auto cert = crypto::IssueCertificate({.common_name = "berthd",
                                        .ip_addresses = {"127.0.0.1"},
                                        .use = crypto::CertificateUse::kServer},
                                       *ca);
  ASSERT_TRUE(cert);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "tls.crt", cert->certificate_pem));
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "tls.key", cert->key.pem));
  net::ServerOptions options;
  options.tls_cert_file = (dir->Path() / "tls.crt").string();
  options.tls_key_file = (dir->Path() / "tls.key").string();
  auto server = net::StartHttpServer(options, [](const net::ServerRequest& r) {
    return net::ServerResponse{.status = 200, .body = "over " + r.method};
  });
  ASSERT_TRUE(server) << server.error().ToString();
  std::string url = "https://127.0.0.1:" + std::to_string((*server)->Port()) + "/";
  auto trusted = net::MakeCurlHttpClient({.ca_pem = ca->certificate_pem})->Send({.url = url});
  ASSERT_TRUE(trusted) << trusted.error().ToString();
  EXPECT_EQ(trusted->body, "over GET");
  auto other_ca = crypto::CreateCertificateAuthority("someone-else", 1h);
  EXPECT_FALSE(net::MakeCurlHttpClient({.ca_pem = other_ca->certificate_pem})->Send({.url = url}));
  std::string plain = "http://127.0.0.1:" + std::to_string((*server)->Port()) + "/";
  auto refused = net::MakeCurlHttpClient()->Send({.url = plain, .timeout = 5s});
  EXPECT_TRUE(!refused || refused->status != 200);
  (*server)->Stop();
}

TEST(HttpServer, PlainHttpOffLoopbackNeedsToBeAskedFor) {
  auto handler = [](const net::ServerRequest&) { return net::ServerResponse{}; };
  auto refused = net::StartHttpServer({.address = "0.0.0.0"}, handler);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("plain HTTP is served on loopback only"),
            std::string::npos);
  auto allowed = net::StartHttpServer({.address = "0.0.0.0", .allow_plain_http = true}, handler);
  ASSERT_TRUE(allowed) << allowed.error().ToString();
  (*allowed)->Stop();
}

}  // namespace
}  // namespace berth::server
