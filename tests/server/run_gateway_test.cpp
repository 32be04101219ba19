// The runner gateway over HTTP: a run's token opens its own run's routes and no other's, an
// expired token or an ended run is refused, a retried log chunk is stored once, and only the
// named artifacts are taken.
#include "server/gateway/run_gateway.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/base64.h"
#include "core/run_result.h"
#include "crypto/digest.h"
#include "net/http_client.h"
#include "server/approved_apply.h"
#include "state_server.h"
#include "sys/files.h"

namespace berth::server {
namespace {

using nlohmann::json;
using S = DeploymentState;

class RunGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("gateway");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto server = StateServer::Start(dir_->Path());
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    store::Store& store = server_->Store();
    ASSERT_TRUE(store.CreateOrganization("acme"));
    ASSERT_TRUE(store.Create({.kind = store::Kind::kProject, .org_id = "acme", .id = "web"}));
    ASSERT_TRUE(
        store.Create({.kind = store::Kind::kEnvType, .org_id = "acme", .id = "development"}));
    store::Record env{
        .kind = store::Kind::kEnvironment, .org_id = "acme", .parent_id = "web", .id = "dev"};
    env.columns = {{"env_type_id", "development"}, {"runner_id", std::nullopt}};
    ASSERT_TRUE(store.Create(env));
    for (const char* id : {"d1", "d2"}) {
      store::Deployment d{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = id};
      d.spec = {.op = DeploymentOp::kApply,
                .source_path = "/nowhere",
                .variables = {{"name", "berth"}, {"count", 2}}};
      ASSERT_TRUE(store.Deployments().Create(d));
    }
    ASSERT_TRUE(store.Deployments().Transition("acme", "d1", S::kQueued, S::kDispatched, "",
                                               {.run_id = "run-1"}));
  }

  net::HttpResponse Send(const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body = "") {
    net::HttpRequest request{.method = method, .url = server_->Url() + path, .body = body};
    if (!token.empty()) request.headers = {{"Authorization", "Bearer " + token}};
    auto response = http_->Send(request);
    EXPECT_TRUE(response);
    return response ? *response : net::HttpResponse{};
  }

  std::string Token(const std::string& run, int64_t expires = UnixSecondsNow() + 600) {
    return server_->Token(run, "acme/web/dev", expires);
  }

  std::optional<sys::TempDir> dir_;
  std::unique_ptr<StateServer> server_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
};

TEST_F(RunGatewayTest, ARunReadsItsInputsAndTheirHashMatchesWhatTheDispatcherPasses) {
  auto inputs = Send("GET", "/runs/v1/run-1/inputs", Token("run-1"));
  ASSERT_EQ(inputs.status, 200) << inputs.body;
  EXPECT_EQ(json::parse(inputs.body), (json{{"count", 2}, {"name", "berth"}}));
  EXPECT_EQ(inputs.headers["x-berth-inputs-hash"], "sha256:" + crypto::Sha256Hex(inputs.body));
  // No bundle and no plan yet: said so, by name.
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/bundle", Token("run-1")).status, 404);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/plan", Token("run-1")).status, 404);
}

TEST_F(RunGatewayTest, ARunGetsItsOrganizationsPlanKeyAndNoOtherRunDoes) {
  auto key = Send("GET", "/runs/v1/run-1/plan-key", Token("run-1"));
  ASSERT_EQ(key.status, 200) << key.body;
  EXPECT_GE(key.body.size(), 32u);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/plan-key", Token("run-1")).body, key.body)
      << "one key per organization, made once";
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/plan-key", "").status, 401);
  auto other = Send("GET", "/runs/v1/run-1/plan-key", Token("run-2"));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(other.body.find(key.body), std::string::npos);
}

// An environment's state key goes to its runs only once its state_encryption is berth: a
// 32-byte key, the same at every ask, and never to another run's token.
TEST_F(RunGatewayTest, ARunGetsItsEnvironmentsStateKeyOnlyWhenItsStateIsEncrypted) {
  auto plain = Send("GET", "/runs/v1/run-1/state-key", Token("run-1"));
  EXPECT_EQ(plain.status, 404) << plain.body;
  EXPECT_NE(plain.body.find("state_encryption"), std::string::npos) << plain.body;
  auto env = server_->Store().Get(store::Kind::kEnvironment, "acme", "web", "dev");
  ASSERT_TRUE(env);
  env->body["state_encryption"] = "berth";
  ASSERT_TRUE(server_->Store().Update(*env, env->version));

  auto key = Send("GET", "/runs/v1/run-1/state-key", Token("run-1"));
  ASSERT_EQ(key.status, 200) << key.body;
  auto bytes = Base64Decode(key.body);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 32u);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/state-key", Token("run-1")).body, key.body);
  auto other = Send("GET", "/runs/v1/run-1/state-key", Token("run-2"));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(other.body.find(key.body), std::string::npos);
}

TEST_F(RunGatewayTest, TokensOfOtherRunsExpiredTokensAndEndedRunsAreRefused) {
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/inputs", "").status, 401);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/inputs", "not-a-token").status, 401);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/inputs", Token("run-1", UnixSecondsNow() - 5)).status, 401);
  auto other = Send("POST", "/runs/v1/run-1/logs?seq=1", Token("run-2"), "forged\n");
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(Send("GET", "/runs/v1/run-2/inputs", Token("run-2")).status, 409);  // no such run
  // A deployment that failed (its deadline) while its runner stops: the runner still sends
  // its log, until berthd has seen it end.
  auto failed =
      server_->Store().Deployments().Transition("acme", "d1", S::kDispatched, S::kFailed, "test");
  ASSERT_TRUE(failed);
  EXPECT_EQ(Send("POST", "/runs/v1/run-1/logs?seq=1", Token("run-1"), "stopping\n").status, 200);
  ASSERT_TRUE(MarkRunEnded(server_->Store(), *failed, "run-1"));
  auto ended = Send("POST", "/runs/v1/run-1/result", Token("run-1"), "{}");
  EXPECT_EQ(ended.status, 409) << ended.body;
  EXPECT_NE(ended.body.find("has ended"), std::string::npos) << ended.body;
  EXPECT_EQ(server_->Store().DeploymentData().ReadLog("acme", "d1", 0, 10)->size(), 1u);
}

TEST_F(RunGatewayTest, ARetriedChunkIsStoredOnceAndFollowersAreWoken) {
  uint64_t before = server_->Feed().Generation();
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto sent = Send("POST", "/runs/v1/run-1/logs?seq=1", Token("run-1"), "[init] one\n");
    ASSERT_EQ(sent.status, 200) << sent.body;
    EXPECT_EQ(json::parse(sent.body)["stored"], attempt == 0);
  }
  ASSERT_EQ(Send("POST", "/runs/v1/run-1/logs?seq=2", Token("run-1"), "[plan] two\n").status, 200);
  EXPECT_EQ(server_->Feed().Generation(), before + 2);
  auto chunks = server_->Store().DeploymentData().ReadLog("acme", "d1", 0, 10);
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[0].data + (*chunks)[1].data, "[init] one\n[plan] two\n");
  auto bad = Send("POST", "/runs/v1/run-1/logs?seq=0", Token("run-1"), "x\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("seq"), std::string::npos) << bad.body;
}

TEST_F(RunGatewayTest, OnlyNamedArtifactsAreTakenAndTheResultIsKeptWhole) {
  std::string plan(
      "PK\x03\x04\x00"
      "binary",
      11);
  EXPECT_EQ(Send("PUT", "/runs/v1/run-1/artifacts/plan", Token("run-1"), plan).status, 200);
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/plan", Token("run-1")).body, plan);
  auto unknown = Send("PUT", "/runs/v1/run-1/artifacts/..%2Fetc", Token("run-1"), "x");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  // Outputs in `output -json`'s shape only: a forged sensitive flag neither reveals a value nor
  // breaks the outputs route.
  for (const char* forged : {"{not json", "[1]", R"({"x": 5})", R"({"x": {"value": 1}})",
                             R"({"x": {"sensitive": "no", "value": "secret"}})",
                             R"({"x": {"sensitive": true, "sealed_value": {}}})"}) {
    auto refused = Send("PUT", "/runs/v1/run-1/artifacts/outputs", Token("run-1"), forged);
    EXPECT_EQ(refused.status, 400) << forged;
    EXPECT_NE(refused.body.find(R"("path":"body")"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(Send("PUT", "/runs/v1/run-1/artifacts/outputs", Token("run-1"),
                 R"({"x": {"sensitive": false, "type": "string", "value": "v"}})")
                .status,
            200);
  RunResult failed;
  failed.op = "apply";
  failed.error = RunError{RunErrorKind::kApply, "apply", "failed", 1, std::string(100000, 'x')};
  std::string result = RunResultToJson(failed).dump();
  EXPECT_EQ(Send("POST", "/runs/v1/run-1/result", Token("run-1"), result).status, 200);
  auto kept = server_->Store().DeploymentData().GetArtifact("acme", "d1", "result:run-1");
  ASSERT_TRUE(kept);
  EXPECT_EQ(ParseRunResult(kept->content).value(), failed);
}

// The change list is shown to every reader of the deployment: a runner's is refused unless
// it is the list's shape (naming the field), and what is kept is what the parser typed.
TEST_F(RunGatewayTest, AChangeListIsTypedFieldByFieldAndNothingElseIsKept) {
  const std::string put = "/runs/v1/run-1/artifacts/changes";
  for (const auto& [forged, field] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", ""},
           {R"({"resource_changes": {}, "output_changes": []})", "$.resource_changes"},
           {R"({"resource_changes": [{"address": 1, "actions": ["create"], "attributes": []}],
               "output_changes": []})",
            "$.resource_changes[0].address"},
           {R"({"resource_changes": [], "output_changes": [{"address": "output.x",
               "actions": ["create"], "attributes": [{"name": "value", "after": {"html": 1},
               "sensitive": false, "unknown": false}]}]})",
            "$.output_changes[0].attributes[0].after"}}) {
    auto refused = Send("PUT", put, Token("run-1"), forged);
    EXPECT_EQ(refused.status, 400) << forged;
    EXPECT_NE(refused.body.find(field), std::string::npos) << refused.body;
  }
  json listed = {{"resource_changes",
                  {{{"address", "a.b"},
                    {"actions", {"create"}},
                    {"attributes",
                     {{{"name", "x"},
                       {"after", "1"},
                       {"sensitive", false},
                       {"unknown", false},
                       {"extra", "<script>"}}}},
                    {"extra", true}}}},
                 {"output_changes", json::array()},
                 {"extra", "dropped"}};
  EXPECT_EQ(Send("PUT", put, Token("run-1"), listed.dump()).status, 200);
  auto kept = server_->Store().DeploymentData().GetArtifact("acme", "d1", "changes");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->content.find("extra"), std::string::npos) << kept->content;
  EXPECT_EQ(json::parse(kept->content)["resource_changes"][0]["attributes"][0]["after"], "1");
}

// The runner shares its Pod with the module: a result shaped to mislead berthd (a plan hash
// that is no string) is refused naming the field, and the one kept before stays.
TEST_F(RunGatewayTest, AResultThatIsNoRunResultIsRefusedAndNothingIsKept) {
  RunResult planned;
  planned.op = "plan";
  planned.plan = PlanSummary{.hash = "sha256:aa"};
  ASSERT_EQ(
      Send("POST", "/runs/v1/run-1/result", Token("run-1"), RunResultToJson(planned).dump()).status,
      200);
  json forged = RunResultToJson(planned);
  forged["plan"]["hash"] = json::array({"sha256:bb"});
  auto refused = Send("POST", "/runs/v1/run-1/result", Token("run-1"), forged.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("$.plan.hash"), std::string::npos) << refused.body;
  EXPECT_EQ(Send("POST", "/runs/v1/run-1/result", Token("run-1"), "{\"op\":\"plan\"}").status, 400);
  auto kept = server_->Store().DeploymentData().GetArtifact("acme", "d1", "result:run-1");
  ASSERT_TRUE(kept);
  EXPECT_EQ(ParseRunResult(kept->content).value(), planned);
}

// A run gets an ID token only when its environment asks for one: signed by a key berthd
// publishes, its claims name the organization, project, environment and phase (plan for a plan
// run, apply for the approved apply, with the approved plan's hash), and the environment's
// audience. Another run's token gets none.
TEST_F(RunGatewayTest, ARunGetsAnIdTokenNamingItsEnvironmentAndPhaseWhenItsEnvironmentAsks) {
  store::Store& store = server_->Store();
  auto none = Send("GET", "/runs/v1/run-1/id-token", Token("run-1"));
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_NE(none.body.find("id_token"), std::string::npos) << none.body;
  auto env = store.Get(store::Kind::kEnvironment, "acme", "web", "dev");
  ASSERT_TRUE(env);
  env->body["id_token"] = {{"audience", "sts.amazonaws.com"}};
  ASSERT_TRUE(store.Update(*env, env->version));

  const json keys = json::parse(
      server_->Oidc().Handle({.method = "GET", .target = std::string(kJwksPath)}).body)["keys"];
  auto claims_of = [&](const std::string& run) {
    auto answer = Send("GET", "/runs/v1/" + run + "/id-token", Token(run));
    EXPECT_EQ(answer.status, 200) << answer.body;
    const std::string token = json::parse(answer.body, nullptr, false).value("token", "");
    const size_t first = token.find('.');
    const size_t second = token.find('.', first + 1);
    auto header = Base64Decode(token.substr(0, first), Base64Alphabet::kUrlNoPadding);
    auto payload =
        Base64Decode(token.substr(first + 1, second - first - 1), Base64Alphabet::kUrlNoPadding);
    if (!header || !payload) return json();
    const std::string kid = json::parse(*header).value("kid", "");
    EXPECT_TRUE(
        std::any_of(keys.begin(), keys.end(), [&](const json& key) { return key["kid"] == kid; }))
        << kid << " is not among " << keys.dump();
    return json::parse(*payload);
  };
  const json applied = claims_of("run-1");  // d1: an apply without approval
  EXPECT_EQ(applied["sub"], "org:acme:project:web:env:dev:phase:apply");
  EXPECT_EQ(applied["aud"], "sts.amazonaws.com");
  EXPECT_EQ(applied["iss"], StateServer::kIssuer);
  EXPECT_EQ(applied["deployment"], "d1");
  EXPECT_EQ(applied["run"], "run-1");
  EXPECT_FALSE(applied.contains("plan_hash")) << "no plan was approved";
  EXPECT_GT(applied["exp"].get<int64_t>(), UnixSecondsNow());
  EXPECT_EQ(Send("GET", "/runs/v1/run-1/id-token", Token("run-2")).status, 403);

  // A deployment that waits for approval: its plan run, then its approved apply.
  ASSERT_TRUE(store.Deployments().Transition("acme", "d1", S::kDispatched, S::kFailed, "test"));
  store::Deployment d3{.org_id = "acme", .project_id = "web", .env_id = "dev", .id = "d3"};
  d3.spec = {.op = DeploymentOp::kApply, .source_path = "/nowhere", .approval_required = true};
  ASSERT_TRUE(store.Deployments().Create(d3));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kQueued, S::kCancelled, "test"));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d3", S::kQueued, S::kDispatched, "",
                                             {.run_id = "d3"}));
  EXPECT_EQ(claims_of("d3")["sub"], "org:acme:project:web:env:dev:phase:plan");
  const std::string plan_hash = "sha256:" + std::string(64, 'd');
  ASSERT_TRUE(store.DeploymentData().PutArtifact(
      "acme", "d3", {.name = "plan", .run_id = "d3", .content = "the plan file"}));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d3", S::kDispatched, S::kRunning, ""));
  ASSERT_TRUE(store.Deployments().Transition(
      "acme", "d3", S::kRunning, S::kWaitingApproval, "",
      {.result = DeploymentResult{.plan = PlanSummary{.hash = plan_hash}}}));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d3", S::kWaitingApproval, S::kDispatched, "",
                                             {.run_id = "d3-apply"}));
  const json approved = claims_of("d3-apply");
  EXPECT_EQ(approved["sub"], "org:acme:project:web:env:dev:phase:apply");
  EXPECT_EQ(approved["phase"], "apply");
  EXPECT_EQ(approved["plan_hash"], plan_hash);
}

// A plan run's runner kept for the apply asks /next with the plan run's token (its run has
// ended): it waits while the plan waits, and while a dispatched apply is not yet marked; it is
// handed the apply run (a token for that run only) once the dispatcher marked it so; and it is
// told to go once the apply is another runner's or the deployment ended.
TEST_F(RunGatewayTest, AKeptPlanRunnerIsHandedItsApplyOnlyOnceTheDispatcherMarkedIt) {
  store::Store& store = server_->Store();
  auto next = [&](const std::string& token, const std::string& run = "d2") {
    return Send("GET", "/runs/v1/" + run + "/next", token);
  };
  // d1 holds the environment: it ends first.
  ASSERT_TRUE(store.Deployments().Transition("acme", "d1", S::kDispatched, S::kFailed, "test"));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kQueued, S::kDispatched, "",
                                             {.run_id = "d2"}));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kDispatched, S::kRunning, ""));
  const std::string plan_hash = "sha256:" + std::string(64, 'c');
  ASSERT_TRUE(store.DeploymentData().PutArtifact(
      "acme", "d2", {.name = "plan", .run_id = "d2", .content = "the plan file"}));
  auto waiting = store.Deployments().Transition(
      "acme", "d2", S::kRunning, S::kWaitingApproval, "",
      {.result = DeploymentResult{.plan = PlanSummary{.hash = plan_hash}}});
  ASSERT_TRUE(waiting) << waiting.error().ToString();
  ASSERT_TRUE(
      MarkRunEnded(store, *waiting, "d2"));  // the plan run's end, as the dispatcher marks it

  auto wait = next(Token("d2"));
  ASSERT_EQ(wait.status, 200) << wait.body;
  EXPECT_EQ(json::parse(wait.body), (json{{"wait", true}}));
  // Another run's token, an expired one, a run that is no deployment's plan: refused.
  EXPECT_EQ(next(Token("run-1")).status, 403);
  EXPECT_EQ(next(Token("d2", UnixSecondsNow() - 1)).status, 401);
  EXPECT_EQ(next(Token("run-1"), "run-1").status, 410);
  EXPECT_EQ(next(server_->Token("d2", "acme/web/prod", UnixSecondsNow() + 600)).status, 410);

  // Approved: dispatched, not yet marked.
  auto dispatched = store.Deployments().Transition("acme", "d2", S::kWaitingApproval,
                                                   S::kDispatched, "", {.run_id = "d2-apply"});
  ASSERT_TRUE(dispatched);
  EXPECT_EQ(json::parse(next(Token("d2")).body), (json{{"wait", true}}));
  ASSERT_TRUE(MarkHandedOver(store, *dispatched, "d2-apply"));
  auto handed = next(Token("d2"));
  ASSERT_EQ(handed.status, 200) << handed.body;
  json handover = json::parse(handed.body);
  EXPECT_EQ(handover["op"], "apply");
  EXPECT_EQ(handover["run_id"], "d2-apply");
  EXPECT_EQ(handover["approved_plan"], plan_hash);
  EXPECT_EQ(handover["approved_plan_sha256"], crypto::Sha256Hex("the plan file"));
  // The token opens the apply run's routes, and no other run's.
  const std::string apply_token = handover["token"];
  EXPECT_EQ(Send("GET", "/runs/v1/d2-apply/inputs", apply_token).status, 200);
  EXPECT_EQ(Send("GET", "/runs/v1/d2/inputs", apply_token).status, 403);
  // The plan run's own routes stay closed to its token: only /next answers it.
  EXPECT_EQ(Send("GET", "/runs/v1/d2/inputs", Token("d2")).status, 409);

  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kDispatched, S::kRunning, ""));
  EXPECT_EQ(next(Token("d2")).status, 200);  // handed: a retried ask gets it again
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kRunning, S::kSucceeded, ""));
  auto gone = next(Token("d2"));
  EXPECT_EQ(gone.status, 410) << gone.body;
  EXPECT_NE(gone.body.find("succeeded"), std::string::npos) << gone.body;
}

// An apply launched in a runner of its own (not marked) is never handed to the kept one.
TEST_F(RunGatewayTest, AKeptPlanRunnerIsToldToGoWhenItsApplyRunsElsewhere) {
  store::Store& store = server_->Store();
  ASSERT_TRUE(store.Deployments().Transition("acme", "d1", S::kDispatched, S::kFailed, "test"));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kQueued, S::kDispatched, "",
                                             {.run_id = "d2-apply"}));
  ASSERT_TRUE(store.Deployments().Transition("acme", "d2", S::kDispatched, S::kRunning, ""));
  auto gone = Send("GET", "/runs/v1/d2/next", Token("d2"));
  EXPECT_EQ(gone.status, 410) << gone.body;
  EXPECT_NE(gone.body.find("runs in a runner of its own"), std::string::npos) << gone.body;
}

}  // namespace
}  // namespace berth::server
