// berth-controller's state service against the real apiserver, over real TLS: a token opens its
// own object's state and no other, locks hold, and states are kept exactly where and as tofu's
// kubernetes backend keeps them (checked with the real tofu on both sides of the change).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "controller/runner_pki.h"
#include "controller/state_server.h"
#include "core/base64.h"
#include "core/inflate.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "state-service";
const std::string kState = R"({"version":4,"serial":3,"lineage":"l-1","resources":[]})";

class StateServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto shared_cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(shared_cluster) << shared_cluster.error().ToString();
    cluster = *shared_cluster;
    ASSERT_TRUE(cluster->CreateNamespace(kNamespace));
    ASSERT_TRUE(cluster->CreateNamespace("berth-system"));
    auto admin = cluster->AdminClient();
    ASSERT_TRUE(admin);
    api = admin->release();
    auto loaded = RunnerPki::LoadOrCreate(*api, SystemClock::Instance(), {.ns = "berth-system"});
    ASSERT_TRUE(loaded) << loaded.error().ToString();
    pki = loaded->release();
    auto started = StateServer::Start(*api, *pki, SystemClock::Instance(),
                                      {.address = "127.0.0.1", .port = 0, .host = "127.0.0.1"});
    ASSERT_TRUE(started) << started.error().ToString();
    server = started->release();
  }
  static void TearDownTestSuite() {
    delete server;
    delete pki;
    delete api;
  }

  static std::string TokenFor(const std::string& name,
                              std::chrono::seconds life = std::chrono::hours(1)) {
    return server->Endpoint().tokens->Mint(kNamespace, name,
                                           std::chrono::system_clock::now() + life);
  }

  static net::HttpResponse Send(const std::string& method, const std::string& name,
                                const std::string& token, const std::string& body = {},
                                const std::string& query = {}) {
    auto http = net::MakeCurlHttpClient({.ca_pem = server->Endpoint().ca_pem});
    net::HttpRequest request{.method = method,
                             .url = server->Endpoint().url + StatePath(kNamespace, name) + query,
                             .body = body};
    if (!token.empty())
      request.headers.emplace_back("Authorization", "Basic " + Base64Encode("run:" + token));
    auto response = http->Send(request);
    EXPECT_TRUE(response) << response.error().ToString();
    return response ? *response : net::HttpResponse{};
  }

  // tofu with its kubernetes backend on the object's Secret, as runner Pods ran it before.
  static sys::Completed KubernetesBackendTofu(const fs::path& dir, std::vector<std::string> args) {
    auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
    EXPECT_TRUE(tofu);
    std::vector<std::string> argv = {tofu->string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto done = sys::RunToCompletion(
        {.argv = argv,
         .env = std::vector<std::string>{"HOME=" + dir.string(), "PATH=/usr/bin:/bin",
                                         "KUBE_CONFIG_PATH=" + cluster->AdminKubeconfig().string(),
                                         "TF_IN_AUTOMATION=1"},
         .working_dir = dir.string()});
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{.exit_code = -1};
  }

  static fs::path KubernetesBackendModule(const sys::TempDir& dir, const std::string& name) {
    EXPECT_TRUE(sys::WriteFileAtomic(
        dir.Path() / "main.tf",
        "terraform {\n  backend \"kubernetes\" {\n    secret_suffix = \"" + name +
            "\"\n    namespace = \"" + kNamespace +
            "\"\n  }\n}\nresource \"terraform_data\" \"x\" {\n  input = \"legacy\"\n}\n"));
    auto init = KubernetesBackendTofu(dir.Path(), {"init", "-input=false", "-no-color"});
    EXPECT_EQ(init.exit_code, 0) << init.output;
    return dir.Path();
  }

  static inline testenv::KubeTestCluster* cluster = nullptr;
  static inline kube::KubeApi* api = nullptr;
  static inline RunnerPki* pki = nullptr;
  static inline StateServer* server = nullptr;
};

TEST_F(StateServiceTest, ATokenOpensItsOwnObjectsStateAndNoOther) {
  EXPECT_EQ(Send("GET", "alpha", TokenFor("alpha")).status, 204) << "no state yet";
  ASSERT_EQ(Send("POST", "alpha", TokenFor("alpha"), kState).status, 200);
  auto read = Send("GET", "alpha", TokenFor("alpha"));
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body, kState);

  // alpha's token on beta's state, in every verb, and tokens that are not alpha's at all.
  for (const char* method : {"GET", "POST", "LOCK", "UNLOCK", "DELETE"})
    EXPECT_EQ(Send(method, "beta", TokenFor("alpha"), method[0] == 'G' ? "" : kState).status, 401)
        << method;
  EXPECT_EQ(Send("GET", "alpha", "").status, 401) << "no token";
  EXPECT_EQ(Send("GET", "alpha", TokenFor("alpha", std::chrono::seconds(-1))).status, 401)
      << "expired";
  const std::string forged = TokenFor("alpha").substr(0, 11) + std::string(64, 'a');
  EXPECT_EQ(Send("GET", "alpha", forged).status, 401) << "forged";
  StateTokens other_key("another controller's key");
  EXPECT_EQ(Send("GET", "alpha",
                 other_key.Mint(kNamespace, "alpha",
                                std::chrono::system_clock::now() + std::chrono::hours(1)))
                .status,
            401)
      << "another CA's token";
  // A token's expiry cannot be stretched: it is inside the MAC.
  const std::string token = TokenFor("alpha");
  EXPECT_EQ(Send("GET", "alpha", "9" + token).status, 401);
  EXPECT_FALSE(api->Get(kube::kSecrets, kNamespace, StateSecretName("beta")))
      << "nothing was written for beta";

  // A path that names no state, and a request over the state's size, are refused whole.
  EXPECT_EQ(Send("GET", "Not_A_Name", TokenFor("Not_A_Name")).status, 404);
  EXPECT_EQ(Send("POST", "alpha", TokenFor("alpha"), std::string(33 << 20, ' ')).status, 413);
  EXPECT_EQ(Send("POST", "alpha", TokenFor("alpha"), "[[[[").status, 400);
  EXPECT_EQ(Send("GET", "alpha", TokenFor("alpha")).body, kState) << "refused writes left it";
}

TEST_F(StateServiceTest, ALockHeldByOneRunKeepsEveryOtherWriterOut) {
  const json mine = {{"ID", "run-1"}, {"Who", "runner@alpha"}};
  const json theirs = {{"ID", "run-2"}, {"Who", "runner@other"}};
  const std::string token = TokenFor("locked");
  ASSERT_EQ(Send("LOCK", "locked", token, mine.dump()).status, 200);
  EXPECT_EQ(Send("LOCK", "locked", token, mine.dump()).status, 200) << "its own lock again";
  auto refused = Send("LOCK", "locked", token, theirs.dump());
  EXPECT_EQ(refused.status, 423);
  EXPECT_EQ(json::parse(refused.body, nullptr, false).value("Who", ""), "runner@alpha")
      << "tofu shows who holds it";
  EXPECT_EQ(Send("POST", "locked", token, kState, "?ID=run-2").status, 423);
  EXPECT_EQ(Send("POST", "locked", token, kState).status, 423) << "a write without the lock";
  EXPECT_EQ(Send("POST", "locked", token, kState, "?ID=run-1").status, 200);
  EXPECT_EQ(Send("UNLOCK", "locked", token, theirs.dump()).status, 423);
  EXPECT_EQ(Send("UNLOCK", "locked", token, mine.dump()).status, 200);
  EXPECT_EQ(Send("UNLOCK", "locked", token, mine.dump()).status, 200) << "a retried unlock";
  EXPECT_EQ(Send("LOCK", "locked", token, theirs.dump()).status, 200) << "free again";
  EXPECT_EQ(Send("LOCK", "locked", token, "{}").status, 400) << "a lock names its ID";
}

TEST_F(StateServiceTest, StatesStayWhereAndAsTofusKubernetesBackendKeepsThem) {
  // A state the kubernetes backend wrote before is read through the service...
  auto dir = sys::TempDir::Create("legacy");
  ASSERT_TRUE(dir);
  const fs::path module = KubernetesBackendModule(*dir, "legacy");
  auto applied =
      KubernetesBackendTofu(module, {"apply", "-auto-approve", "-input=false", "-no-color"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto read = Send("GET", "legacy", TokenFor("legacy"));
  ASSERT_EQ(read.status, 200);
  json state = json::parse(read.body, nullptr, false);
  ASSERT_TRUE(state.is_object()) << read.body;
  EXPECT_EQ(state["resources"][0].value("type", ""), "terraform_data");

  // ...a state the service writes is the kubernetes backend's to read...
  state["serial"] = state.value("serial", 0) + 1;
  state["outputs"]["from_service"] = {{"value", "yes"}, {"type", "string"}};
  ASSERT_EQ(Send("POST", "legacy", TokenFor("legacy"), state.dump()).status, 200);
  auto shown = KubernetesBackendTofu(module, {"output", "-raw", "from_service"});
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(shown.output, "yes");
  auto secret = api->Get(kube::kSecrets, kNamespace, StateSecretName("legacy"));
  ASSERT_TRUE(secret);
  EXPECT_EQ((*secret)["metadata"]["labels"].value("tfstate", ""), "true");

  // ...and a lock taken through the service holds the kubernetes backend off.
  const json held = {{"ID", "run-9"}, {"Who", "runner@legacy"}};
  ASSERT_EQ(Send("LOCK", "legacy", TokenFor("legacy"), held.dump()).status, 200);
  auto blocked =
      KubernetesBackendTofu(module, {"plan", "-input=false", "-no-color", "-lock-timeout=0s"});
  EXPECT_NE(blocked.exit_code, 0);
  EXPECT_NE(blocked.output.find("runner@legacy"), std::string::npos) << blocked.output;
  EXPECT_EQ(Send("UNLOCK", "legacy", TokenFor("legacy"), held.dump()).status, 200);
  auto free =
      KubernetesBackendTofu(module, {"plan", "-input=false", "-no-color", "-lock-timeout=0s"});
  EXPECT_EQ(free.exit_code, 0) << free.output;
}

}  // namespace
}  // namespace berth::controller
