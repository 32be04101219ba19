// What protects berthd: per-token rate limits (429 with Retry-After, on a simulated clock),
// TLS from files, plain HTTP refused off loopback, and runner settings this berthd cannot hold
// refused when saved.
#include <gtest/gtest.h>

#include "api_fixture.h"
#include "api_without_runners.h"
#include "core/clock.h"
#include "crypto/x509.h"
#include "launch/kubernetes/cluster_target.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "server/api/rate_limiter.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

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

// A kubernetes runner's cluster is saved only when this berthd can reach it with what the
// operator gave the organization: a context of its kubeconfig, or a server with a CA
// certificate and a token file, both in the organization's own folder of --clusters-dir
// (another organization's context or token is never used on its behalf). Naming a cluster is
// an admin's: a configure token is refused, naming the field.
class RunnerClusterApi : public ApiFixture {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("cluster-means");
    ASSERT_TRUE(dir);
    means_dir_.emplace(std::move(*dir));
    const auto& root = means_dir_->Path();
    std::filesystem::create_directories(root / "acme");
    std::filesystem::create_directories(root / "other");
    ASSERT_TRUE(sys::WriteFileAtomic(root / "acme/prod.token", "secret-acme\n"));
    ASSERT_TRUE(sys::WriteFileAtomic(root / "other/theirs.token", "secret-other\n"));
    auto ca = crypto::CreateCertificateAuthority("prod-ca", std::chrono::hours(1));
    ASSERT_TRUE(ca);
    ca_pem_ = ca->certificate_pem;
    ASSERT_TRUE(sys::WriteFileAtomic(root / "acme/kubeconfig", Kubeconfig("prod")));
    ASSERT_TRUE(sys::WriteFileAtomic(root / "other/kubeconfig", Kubeconfig("theirs")));
    ApiFixture::SetUp();
  }
  static std::string Kubeconfig(const std::string& context) {
    return "apiVersion: v1\nkind: Config\n"
           "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\n"
           "users: [{name: berthd, user: {token: t}}]\n"
           "contexts: [{name: " +
           context + ", context: {cluster: c, user: berthd}}]\n";
  }
  ApiOptions Options() override { return OptionsWithIssuer("https://berth.example"); }
  ApiOptions OptionsWithIssuer(const std::string& issuer) {
    return {.clusters = launch::ClusterMeans{
                .dir = means_dir_->Path(),
                .sign_id_token = [](const json&, std::chrono::seconds) -> Result<std::string> {
                  return MakeError(ErrorKind::kInternal, "a runner's save signs nothing");
                },
                .issuer = issuer}};
  }
  net::ServerResponse Save(const std::string& id, const json& cluster,
                           const std::string& token = "") {
    const json body = {
        {"id", id},
        {"runner_configuration",
         {{"type", "kubernetes"}, {"cluster", cluster}, {"job", {{"namespace", "runners"}}}}},
        {"state_storage_configuration", {{"type", "berth"}}}};
    return CallAs(token.empty() ? token_ : token, "POST", "/orgs/acme/runners", body.dump());
  }
  json ByServer(const std::string& token_file) const {
    return WithAuth({{"token_file", token_file}});
  }
  json ByIdToken(const std::string& audience) const {
    return WithAuth({{"oidc_audience", audience}});
  }
  json WithAuth(const json& auth) const {
    return {
        {"server", "https://10.0.0.1:6443"}, {"certificate_authority", ca_pem_}, {"auth", auth}};
  }

  std::optional<sys::TempDir> means_dir_;
  std::string ca_pem_;
};

TEST_F(RunnerClusterApi, AClusterIsSavedOnlyWhenThisBerthdCanReachIt) {
  EXPECT_EQ(Save("by-context", {{"kubeconfig_context", "prod"}}).status, 201);
  EXPECT_EQ(Save("by-server", ByServer("prod.token")).status, 201);
  const json by_id_token = ByIdToken("prod-cluster");
  EXPECT_EQ(Save("by-id-token", by_id_token).status, 201);
  for (const char* context : {"staging", "theirs"}) {  // nowhere, and another organization's
    auto unknown = Save(std::string("unknown-") + context, {{"kubeconfig_context", context}});
    EXPECT_EQ(unknown.status, 409) << unknown.body;
    EXPECT_NE(unknown.body.find("$.runner_configuration.cluster.kubeconfig_context"),
              std::string::npos)
        << unknown.body;
    EXPECT_NE(unknown.body.find(context), std::string::npos) << unknown.body;
  }
  auto credentials = Save("credentials", ByServer("kubeconfig"));
  EXPECT_EQ(credentials.status, 409) << credentials.body;
  EXPECT_NE(credentials.body.find("not a token file"), std::string::npos) << credentials.body;
  auto theirs = Save("theirs", ByServer("theirs.token"));
  EXPECT_EQ(theirs.status, 409) << theirs.body;
  EXPECT_NE(theirs.body.find("$.runner_configuration.cluster.auth.token_file"), std::string::npos)
      << theirs.body;
  EXPECT_NE(theirs.body.find("folder acme"), std::string::npos) << theirs.body;
  json not_a_certificate = ByServer("prod.token");
  not_a_certificate["certificate_authority"] =
      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  auto broken = Save("broken", not_a_certificate);
  EXPECT_EQ(broken.status, 409) << broken.body;
  EXPECT_NE(broken.body.find("$.runner_configuration.cluster.certificate_authority"),
            std::string::npos)
      << broken.body;
  EXPECT_EQ(broken.body.find("secret-acme"), std::string::npos) << "a token never comes back";
  auto listed = Call("GET", "/orgs/acme/runners");
  EXPECT_EQ(listed.body.find("\"unknown-"), std::string::npos) << listed.body;
  EXPECT_EQ(listed.body.find("\"theirs\""), std::string::npos) << listed.body;

  // A cluster fetches an issuer's keys over https only: a berthd without an https public URL
  // cannot give a cluster an ID token it would take.
  Start(OptionsWithIssuer("http://127.0.0.1:8480"));
  auto unverifiable = Save("unverifiable", by_id_token);
  EXPECT_EQ(unverifiable.status, 409) << unverifiable.body;
  EXPECT_NE(unverifiable.body.find("$.runner_configuration.cluster.auth.oidc_audience"),
            std::string::npos)
      << unverifiable.body;
  EXPECT_NE(unverifiable.body.find("--public-url"), std::string::npos) << unverifiable.body;
}

// What a hostile admin could try: a token path out of the folder, a server in clear text or
// another scheme, a half-named cluster, both ways at once. Each is refused by the schema,
// naming the field, before any file is looked at.
TEST_F(RunnerClusterApi, APathOutOfTheTokenFolderOrAServerInClearIsRefusedNamingTheField) {
  auto patched = [](json cluster, const json& patch) {
    cluster.merge_patch(patch);
    return cluster;
  };
  const std::vector<std::pair<json, std::string>> hostile = {
      {ByServer("../other/theirs.token"), "$.runner_configuration.cluster.auth.token_file"},
      {ByServer("../other/kubeconfig"), "$.runner_configuration.cluster.auth.token_file"},
      {ByServer("/etc/shadow"), "$.runner_configuration.cluster.auth.token_file"},
      {ByServer(".hidden"), "$.runner_configuration.cluster.auth.token_file"},
      {patched(ByServer("prod.token"), {{"server", "http://10.0.0.1:6443"}}),
       "$.runner_configuration.cluster.server"},
      {patched(ByServer("prod.token"), {{"server", "file:///etc/passwd"}}),
       "$.runner_configuration.cluster.server"},
      {{{"server", "https://10.0.0.1:6443"}}, "$.runner_configuration.cluster"},
      {patched(ByServer("prod.token"), {{"kubeconfig_context", "prod"}}),
       "$.runner_configuration.cluster"},
      {{{"kubeconfig_context", "prod"}, {"extra", 1}}, "$.runner_configuration.cluster.extra"},
      {WithAuth({{"token_file", "prod.token"}, {"oidc_audience", "prod"}}),
       "$.runner_configuration.cluster.auth"},
      {WithAuth(json::object()), "$.runner_configuration.cluster.auth"},
      {ByIdToken("with space"), "$.runner_configuration.cluster.auth.oidc_audience"}};
  int n = 0;
  for (const auto& [cluster, field] : hostile) {
    auto refused = Save("hostile-" + std::to_string(n++), cluster);
    EXPECT_EQ(refused.status, 400) << cluster.dump() << " " << refused.body;
    EXPECT_NE(refused.body.find(field), std::string::npos) << cluster.dump() << " " << refused.body;
  }
}

TEST_F(RunnerClusterApi, NamingAClusterIsAnAdminsAndWithoutKubernetesItIsRefused) {
  auto configure = IssueToken(*store_, "acme", "configure", Scopes::Of({Scope::kConfigure}));
  ASSERT_TRUE(configure) << configure.error().ToString();
  auto denied = Save("by-configure", {{"kubeconfig_context", "prod"}}, *configure);
  EXPECT_EQ(denied.status, 403) << denied.body;
  EXPECT_NE(denied.body.find("$.runner_configuration.cluster"), std::string::npos) << denied.body;
  // The same runner without a cluster (berthd's own) is the configure token's to save.
  const json own = {
      {"id", "own"},
      {"runner_configuration", {{"type", "kubernetes"}, {"job", {{"namespace", "runners"}}}}},
      {"state_storage_configuration", {{"type", "berth"}}}};
  EXPECT_EQ(CallAs(*configure, "POST", "/orgs/acme/runners", own.dump()).status, 201);

  Start(ApiOptions{});  // a berthd without --kubernetes
  auto nowhere = Save("nowhere", {{"kubeconfig_context", "prod"}});
  EXPECT_EQ(nowhere.status, 409) << nowhere.body;
  EXPECT_NE(nowhere.body.find("start it with --kubernetes"), std::string::npos) << nowhere.body;
}

// POST .../runners/{id}/check hands a kubernetes runner's saved configuration to berthd's
// cluster check and answers what it found; other types, and a berthd without --kubernetes,
// are refused; a read token may not make berthd call out.
class RunnerCheckApi : public ApiFixture {
 protected:
  ApiOptions Options() override {
    return {.check_cluster = [this](const std::string& org, const std::string& runner,
                                    const json& configuration) -> Result<launch::ClusterCheck> {
      asked_ = org + "/" + runner + " " + configuration.dump();
      return launch::ClusterCheck{.cluster = "berthd's own",
                                  .credential = "berthd's own",
                                  .ns = configuration["job"].value("namespace", ""),
                                  .user = "system:serviceaccount:runners:berthd",
                                  .missing = {"create secrets"}};
    }};
  }
  std::string asked_;
};

TEST_F(RunnerCheckApi, AKubernetesRunnersCheckSaysWhatItsRunsWouldMeet) {
  ASSERT_EQ(
      Call(
          "POST", "/orgs/acme/runners",
          R"({"id":"k","runner_configuration":{"type":"kubernetes","job":{"namespace":"runners"}},"state_storage_configuration":{"type":"berth"}})")
          .status,
      201);
  ASSERT_EQ(
      Call(
          "POST", "/orgs/acme/runners",
          R"({"id":"here","runner_configuration":{"type":"local"},"state_storage_configuration":{"type":"berth"}})")
          .status,
      201);
  auto checked = Call("POST", "/orgs/acme/runners/k/check");
  ASSERT_EQ(checked.status, 200) << checked.body;
  EXPECT_NE(asked_.find("acme/k "), std::string::npos) << asked_;
  const json answer = json::parse(checked.body);
  EXPECT_EQ(answer["ok"], false) << "a right is missing";
  EXPECT_EQ(answer["missing"], json({"create secrets"}));
  EXPECT_EQ(answer["namespace"], "runners");
  EXPECT_EQ(answer["user"], "system:serviceaccount:runners:berthd");

  auto local = Call("POST", "/orgs/acme/runners/here/check");
  EXPECT_EQ(local.status, 409) << local.body;
  EXPECT_NE(local.body.find("only a kubernetes runner"), std::string::npos) << local.body;
  EXPECT_EQ(Call("POST", "/orgs/acme/runners/none/check").status, 404);
  auto reader = IssueToken(*store_, "acme", "reader", Scopes::Of({Scope::kRead}));
  ASSERT_TRUE(reader);
  EXPECT_EQ(CallAs(*reader, "POST", "/orgs/acme/runners/k/check").status, 403);

  Start(ApiOptions{});  // a berthd without --kubernetes
  auto nowhere = Call("POST", "/orgs/acme/runners/k/check");
  EXPECT_EQ(nowhere.status, 409) << nowhere.body;
  EXPECT_NE(nowhere.body.find("--kubernetes"), std::string::npos) << nowhere.body;
}

}  // namespace
}  // namespace berth::server
