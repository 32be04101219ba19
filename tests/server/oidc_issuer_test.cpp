// berthd's OpenID Connect issuer against a real verifier: the test cluster's kube-apiserver,
// started with a structured AuthenticationConfiguration that trusts the issuer (discovery
// and JWKS over TLS), takes berthd's ID token as a user and refuses an expired one, one of
// another audience and one signed by a key berthd does not publish; a key rotates by period
// and the previous period's tokens still pass.
#include "server/oidc/oidc_issuer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "crypto/x509.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "store/store.h"
#include "sys/files.h"
#include "tls_issuer.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kAudience[] = "kube-test";
// Short, so that a test sees a rotation: tokens live a period at most.
constexpr auto kPeriod = std::chrono::seconds(10);

// The real time, moved by the test: a token minted in the past is an expired one.
class ShiftedClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point Wall() override {
    return std::chrono::system_clock::now() + shift.load();
  }
  std::atomic<std::chrono::seconds> shift{std::chrono::seconds(0)};
};

class OidcIssuerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto made = sys::TempDir::Create("oidc-issuer");
    ASSERT_TRUE(made);
    dir = new sys::TempDir(std::move(*made));
    auto opened = store::OpenStore("sqlite:" + (dir->Path() / "berth.db").string());
    ASSERT_TRUE(opened) << opened.error().ToString();
    store = opened->release();
    clock = new ShiftedClock();
    auto started = TlsIssuer::Start(*store, *clock, dir->Path(), kPeriod);
    ASSERT_TRUE(started) << started.error().ToString();
    tls = started->release();
    issuer = tls->issuer.get();
    tls->TrustedByNextApiserver(kAudience, "berth:");
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    kube = *cluster;
  }
  static void TearDownTestSuite() {
    delete tls;
    delete clock;
    delete store;
    delete dir;
  }

  // Who the apiserver takes the token's bearer for (SelfSubjectReview), or "" when it refuses
  // the token (401).
  static std::string UserOf(const std::string& token) {
    auto http = net::MakeCurlHttpClient({.ca_pem = kube->CaPem()});
    Result<net::HttpResponse> response = MakeError(ErrorKind::kUnavailable, "not asked");
    // The apiserver has just started: a connection it cuts is asked again.
    for (int attempt = 0; attempt < 50 && !response; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      response = http->Send(
          {.method = "POST",
           .url = kube->Url() + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
           .headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}},
           .body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})"});
    }
    EXPECT_TRUE(response) << response.error().ToString();
    if (!response || response->status == 401) return "";
    EXPECT_EQ(response->status, 201) << response->body;
    return json::parse(response->body, nullptr, false)["status"]["userInfo"].value("username", "");
  }

  static std::string Mint(const std::string& sub, const std::string& audience = kAudience,
                          std::chrono::seconds lifetime = std::chrono::minutes(10)) {
    // (cut to kPeriod by the issuer)
    auto token = issuer->Mint({{"sub", sub}, {"aud", audience}}, lifetime);
    EXPECT_TRUE(token) << token.error().ToString();
    return token ? *token : "";
  }

  static inline testenv::KubeTestCluster* kube = nullptr;
  static inline sys::TempDir* dir = nullptr;
  static inline store::Store* store = nullptr;
  static inline ShiftedClock* clock = nullptr;
  static inline TlsIssuer* tls = nullptr;
  static inline OidcIssuer* issuer = nullptr;  // tls's
};

TEST_F(OidcIssuerTest, TheApiserverTakesBerthdsTokenAndRefusesWhatItMustNot) {
  const std::string sub = "org:acme:project:net:env:prod:phase:apply";
  // The authenticator reads discovery in the background after the apiserver's start.
  std::string user;
  for (int i = 0; i < 300 && user.empty(); ++i) {
    user = UserOf(Mint(sub));
    if (user.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(user, "berth:" + sub);

  EXPECT_EQ(UserOf(Mint(sub, "sts.amazonaws.com")), "") << "another audience";
  clock->shift = -std::chrono::minutes(2);
  const std::string expired = Mint(sub);  // a period long, ended minutes ago
  clock->shift = std::chrono::seconds(0);
  EXPECT_EQ(UserOf(expired), "") << "expired";

  // A key of the same name that berthd never published.
  auto stranger_key = crypto::PrivateKey::GenerateEcP256();
  ASSERT_TRUE(stranger_key);
  const json published = json::parse(
      issuer->Handle({.method = "GET", .target = std::string(kJwksPath)}).body, nullptr, false);
  const std::string current_kid = published["keys"][1].value("kid", "");
  auto stranger = crypto::Es256Key::FromPem(stranger_key->pem, current_kid);
  ASSERT_TRUE(stranger);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(clock->Wall().time_since_epoch()).count();
  auto forged = stranger->SignJwt({{"iss", issuer->Issuer()},
                                   {"sub", sub},
                                   {"aud", kAudience},
                                   {"iat", now},
                                   {"exp", now + 600}});
  ASSERT_TRUE(forged);
  EXPECT_EQ(UserOf(*forged), "") << "signed by a key berthd does not publish";
}

TEST_F(OidcIssuerTest, KeysRotateByPeriodAndThePreviousPeriodsTokensStillPass) {
  auto jwks = [] {
    return json::parse(issuer->Handle({.method = "GET", .target = std::string(kJwksPath)}).body,
                       nullptr, false);
  };
  // Late in a period, so that the token outlives it.
  while (std::chrono::system_clock::now().time_since_epoch() % kPeriod < std::chrono::seconds(6))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const json before = jwks();
  ASSERT_EQ(before["keys"].size(), 3u) << "previous, current, next";
  const std::string plan = "org:acme:project:net:env:dev:phase:plan";
  const std::string token = Mint(plan);
  json after = before;
  while (after["keys"][1] == before["keys"][1]) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = jwks();
  }
  EXPECT_EQ(after["keys"][0], before["keys"][1]) << "the signing key is now the previous one";
  EXPECT_EQ(after["keys"][1], before["keys"][2]) << "the next key was published a period ahead";
  EXPECT_EQ(UserOf(token), "berth:" + plan) << "a token of the previous period's key";
  const std::string apply = "org:acme:project:net:env:dev:phase:apply";
  // The API server fetches berthd's keys again when a token names one its cache lacks; on a
  // loaded machine that fetch may come a moment later (CI once saw the first review refused).
  std::string user;
  for (int i = 0; i < 50 && (user = UserOf(Mint(apply))).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(user, "berth:" + apply) << "a token of the new period's key";

  // Another berthd on the same database publishes and signs with the same keys.
  OidcIssuer replica(*store, *clock, {.issuer = issuer->Issuer(), .key_period = kPeriod});
  const json mine = jwks();
  EXPECT_EQ(json::parse(replica.Handle({.method = "GET", .target = std::string(kJwksPath)}).body),
            mine);

  const json discovery =
      json::parse(issuer->Handle({.method = "GET", .target = std::string(kDiscoveryPath)}).body);
  EXPECT_EQ(discovery["issuer"], issuer->Issuer());
  EXPECT_EQ(discovery["jwks_uri"], issuer->Issuer() + std::string(kJwksPath));
  EXPECT_EQ(discovery["id_token_signing_alg_values_supported"], json::array({"ES256"}));
  EXPECT_EQ(issuer->Handle({.method = "POST", .target = std::string(kJwksPath)}).status, 405);
}

}  // namespace
}  // namespace berth::server
