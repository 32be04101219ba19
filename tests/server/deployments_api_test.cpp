// Deployments through the API: queued in order per environment, read back, listed newest
// first, cancelled while queued (the dispatcher's decision, as in berthd), with every
// refusal naming its field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "api_fixture.h"
#include "core/change_list.h"

namespace berth::server {
namespace {

using nlohmann::json;

class DeploymentsApi : public ApiFixture {
 protected:
  ApiOptions Options() override { return {.allow_server_paths = true}; }

  void SetUp() override {
    ApiFixture::SetUp();
    module_ = json{{"op", "apply"}, {"source", {{"path", dir_->Path().string()}}}}.dump();
  }

  const std::string kEnv = "/orgs/acme/projects/web/envs/dev/deployments";
  std::string module_;
};

TEST_F(DeploymentsApi, QueuesReadsListsAndCancels) {
  auto first = Call("POST", kEnv, module_);
  ASSERT_EQ(first.status, 201) << first.body;
  auto d1 = json::parse(first.body);
  EXPECT_EQ(d1["state"], "queued");
  EXPECT_EQ(d1["sequence"], 1);
  EXPECT_EQ(d1["op"], "apply");
  auto d2 = json::parse(Call("POST", kEnv, module_).body);
  EXPECT_EQ(d2["sequence"], 2);

  auto read = Call("GET", "/orgs/acme/deployments/" + d1["id"].get<std::string>());
  ASSERT_EQ(read.status, 200);
  EXPECT_EQ(json::parse(read.body)["transitions"][0]["state"], "queued");
  auto list = json::parse(Call("GET", kEnv).body);
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][0]["id"], d2["id"]);

  std::string cancel = "/orgs/acme/deployments/" + d2["id"].get<std::string>() + "/cancel";
  auto cancelled = Call("POST", cancel);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(json::parse(cancelled.body)["state"], "cancelled");
  EXPECT_EQ(Call("POST", cancel).status, 409);  // it has ended
  EXPECT_EQ(Call("GET", "/orgs/acme/deployments/d-nothing").status, 404);
}

// The dashboard's overview: every environment of every project in one answer, with the
// deployment holding it, its newest, and how many wait behind.
TEST_F(DeploymentsApi, TheOverviewShowsEachEnvironmentsHolderNewestAndQueue) {
  ASSERT_EQ(
      Call("POST", "/orgs/acme/projects/web/envs", R"({"id":"idle","env_type_id":"development"})")
          .status,
      201);
  ASSERT_EQ(Call("POST", "/orgs/acme/projects", R"({"id":"api"})").status, 201);
  ASSERT_EQ(Call("POST", "/orgs/acme/projects/api/envs",
                 R"({"id":"prod","env_type_id":"development","display_name":"Production"})")
                .status,
            201);
  std::string held = json::parse(Call("POST", kEnv, module_).body)["id"];
  ASSERT_TRUE(store_->Deployments().Transition("acme", held, DeploymentState::kQueued,
                                               DeploymentState::kDispatched, ""));
  ASSERT_EQ(Call("POST", kEnv, module_).status, 201);
  std::string newest = json::parse(Call("POST", kEnv, module_).body)["id"];
  std::string prod = "/orgs/acme/projects/api/envs/prod/deployments";
  std::string ended = json::parse(Call("POST", prod, module_).body)["id"];
  ASSERT_EQ(Call("POST", "/orgs/acme/deployments/" + ended + "/cancel").status, 200);

  auto answer = Call("GET", "/orgs/acme/overview");
  ASSERT_EQ(answer.status, 200) << answer.body;
  json envs = json::parse(answer.body)["environments"];
  ASSERT_EQ(envs.size(), 3u) << envs.dump();
  EXPECT_EQ(envs[0]["project_id"], "api");
  EXPECT_EQ(envs[0]["display_name"], "Production");
  EXPECT_EQ(envs[0]["last_deployment"]["id"], ended);
  EXPECT_EQ(envs[0]["last_deployment"]["state"], "cancelled");
  EXPECT_TRUE(envs[0]["holder"].is_null());
  EXPECT_EQ(envs[0]["queued"], 0);
  EXPECT_EQ(envs[1]["id"], "dev");
  EXPECT_EQ(envs[1]["holder"]["id"], held);
  EXPECT_EQ(envs[1]["holder"]["state"], "dispatched");
  EXPECT_EQ(envs[1]["last_deployment"]["id"], newest);
  EXPECT_EQ(envs[1]["last_deployment"]["op"], "apply");
  EXPECT_EQ(envs[1]["queued"], 2);
  EXPECT_TRUE(envs[1]["runner_id"].is_null());
  EXPECT_EQ(envs[2]["id"], "idle");
  EXPECT_TRUE(envs[2]["last_deployment"].is_null());
  EXPECT_EQ(envs[2]["queued"], 0);
  EXPECT_EQ(CallAs("not-a-token", "GET", "/orgs/acme/overview").status, 401);
}

// A plan's change list is for every reader, once the plan run sent it (404 before); its values
// only for callers who could print them from a run anyway (deploy): a provider may mark an
// attribute sensitive in its schema alone, which the plan's marks do not carry.
TEST_F(DeploymentsApi, TheChangeListIsReadWithAnyScopeAndItsValuesWithDeploy) {
  std::string id = json::parse(Call("POST", kEnv, module_).body)["id"];
  const std::string path = "/orgs/acme/deployments/" + id + "/changes";
  EXPECT_EQ(Call("GET", path).status, 404);
  const json listed = {
      {"resource_changes",
       {{{"address", "db.main"},
         {"actions", {"update"}},
         {"attributes",
          {{{"name", "password"},
            {"before", "old-secret"},
            {"after", "new-secret"},
            {"sensitive", false},
            {"unknown", false}},
           {{"name", "id"}, {"before", "x"}, {"sensitive", false}, {"unknown", false}}}}}}},
      {"output_changes",
       {{{"address", "output.url"},
         {"actions", {"create"}},
         {"attributes",
          {{{"name", "value"},
            {"after", "https://db"},
            {"sensitive", false},
            {"unknown", false}}}}}}}};
  ASSERT_TRUE(store_->DeploymentData().PutArtifact(
      "acme", id, {.name = "changes", .run_id = "r", .content = listed.dump()}));
  auto reader = IssueToken(*store_, "acme", "reader", Scopes::Of({Scope::kRead}));
  ASSERT_TRUE(reader) << reader.error().ToString();
  auto read = CallAs(*reader, "GET", path);
  EXPECT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.body.find("secret"), std::string::npos) << read.body;
  EXPECT_EQ(read.body.find("https://db"), std::string::npos) << read.body;
  const json seen = json::parse(read.body);
  EXPECT_EQ(seen["resource_changes"][0]["address"], "db.main");
  EXPECT_EQ(seen["resource_changes"][0]["attributes"][0]["before"], kHiddenValue);
  EXPECT_FALSE(seen["resource_changes"][0]["attributes"][1].contains("after"));
  auto deployer = IssueToken(*store_, "acme", "deployer", Scopes::Of({Scope::kDeploy}));
  ASSERT_TRUE(deployer);
  EXPECT_EQ(json::parse(CallAs(*deployer, "GET", path).body), listed);
  EXPECT_EQ(CallAs(*reader, "GET", "/orgs/acme/deployments/" + id + "/artifacts/plan").status, 403)
      << "the plan file itself holds secrets in clear";
}

// Cancel and approve belong to the dispatcher: one that did not start a deployment's run
// leaves the cancel in the database for the replica that did (replicas_e2e_test sees it
// stop the run), and one with no launchers approves nothing.
TEST_F(DeploymentsApi, AStartedDeploymentIsCancelledOnlyThroughItsRun) {
  auto d = json::parse(Call("POST", kEnv, module_).body);
  std::string id = d["id"];
  ASSERT_TRUE(store_->Deployments().Transition("acme", id, DeploymentState::kQueued,
                                               DeploymentState::kDispatched, "",
                                               {.owner = "elsewhere"}));
  auto asked = Call("POST", "/orgs/acme/deployments/" + id + "/cancel");
  EXPECT_EQ(asked.status, 202) << asked.body;
  EXPECT_EQ(json::parse(asked.body)["replica"], "elsewhere");
  EXPECT_EQ(store_->Deployments().Get("acme", id)->cancel_requested_by.rfind("token ", 0), 0u);
  auto approve = Call("POST", "/orgs/acme/deployments/" + id + "/approve",
                      json{{"plan_hash", "sha256:" + std::string(64, 'a')}}.dump());
  EXPECT_EQ(approve.status, 409) << approve.body;
  EXPECT_EQ(json::parse(Call("GET", "/orgs/acme/deployments/" + id).body)["state"], "dispatched");
}

TEST_F(DeploymentsApi, LabelsAreCheckedWhenSavedAndSnapshottedOntoEachDeployment) {
  const std::string cpu = "berth.dev/runner-spec.kubernetes_request_cpu";
  const std::string limit = "berth.dev/runner-spec.kubernetes_limit_cpu";
  auto project = Call("PATCH", "/orgs/acme/projects/web",
                      json{{"labels", {{"team", "payments"}, {limit, "2"}}}}.dump());
  ASSERT_EQ(project.status, 200) << project.body;
  EXPECT_EQ(json::parse(project.body)["labels"]["team"], "payments");

  // A bad quantity (400), and a request above the project's limit (409: it clashes with what
  // is saved), are refused naming the label.
  for (const auto& [value, status, rule] : std::vector<std::tuple<std::string, int, std::string>>{
           {"two", 400, "Kubernetes quantity"}, {"3", 409, "conflict with project web's labels"}}) {
    auto refused =
        Call("PATCH", "/orgs/acme/projects/web/envs/dev", json{{"labels", {{cpu, value}}}}.dump());
    EXPECT_EQ(refused.status, status) << refused.body;
    auto error = json::parse(refused.body)["error"];
    EXPECT_EQ(error["fields"][0]["path"], "$.labels['" + cpu + "']") << refused.body;
    EXPECT_NE(error["message"].get<std::string>().find(rule), std::string::npos) << refused.body;
  }
  auto env = Call("PATCH", "/orgs/acme/projects/web/envs/dev",
                  json{{"labels", {{cpu, "500m"}, {"team", "checkout"}}}}.dump());
  ASSERT_EQ(env.status, 200) << env.body;
  // Nor may the project lower its limit below what an environment requests.
  auto lowered =
      Call("PATCH", "/orgs/acme/projects/web", json{{"labels", {{limit, "100m"}}}}.dump());
  EXPECT_EQ(lowered.status, 409) << lowered.body;
  EXPECT_NE(lowered.body.find("conflict with environment dev's labels"), std::string::npos)
      << lowered.body;
  EXPECT_EQ(json::parse(Call("GET", "/orgs/acme/projects/web").body)["labels"][limit], "2");

  auto queued = json::parse(Call("POST", kEnv, module_).body);
  EXPECT_EQ(queued["labels"],
            (json{{"team", "checkout"}, {cpu, "500m"}, {limit, "2"}}))  // the env's team wins
      << queued.dump();
  // A later edit does not change what a queued deployment runs with.
  ASSERT_EQ(Call("PATCH", "/orgs/acme/projects/web/envs/dev",
                 json{{"labels", {{cpu, "1"}, {"team", nullptr}}}}.dump())
                .status,
            200);
  auto read =
      json::parse(Call("GET", "/orgs/acme/deployments/" + queued["id"].get<std::string>()).body);
  EXPECT_EQ(read["labels"][cpu], "500m");
  EXPECT_EQ(read["labels"]["team"], "checkout");
  EXPECT_EQ(read["events"], json::array());
  auto next = json::parse(Call("POST", kEnv, module_).body);
  EXPECT_EQ(next["labels"][cpu], "1");
  EXPECT_EQ(next["labels"]["team"], "payments") << "the project's again, once the env's is gone";
}

TEST_F(DeploymentsApi, RefusalsNameTheirField) {
  auto field_of = [](const net::ServerResponse& response) {
    return json::parse(response.body)["error"]["fields"][0]["path"].get<std::string>();
  };
  auto bad_op = Call("POST", kEnv, R"({"op":"import","source":{"path":"/"}})");
  EXPECT_EQ(bad_op.status, 400);
  EXPECT_EQ(field_of(bad_op), "$.op");
  // Well-formed, but naming what is not there: 409, the same request succeeds once it exists.
  auto not_a_folder = Call("POST", kEnv, R"({"op":"plan","source":{"path":"/nonexistent"}})");
  EXPECT_EQ(not_a_folder.status, 409);
  EXPECT_EQ(field_of(not_a_folder), "$.source.path");
  auto no_bundle =
      Call("POST", kEnv,
           json{{"op", "apply"}, {"source", {{"bundle", "b-" + std::string(32, 'a')}}}}.dump());
  EXPECT_EQ(no_bundle.status, 409);
  EXPECT_EQ(field_of(no_bundle), "$.source.bundle");
  EXPECT_EQ(Call("POST", "/orgs/acme/projects/web/envs/prod/deployments", module_).status, 404);
  const std::string path = dir_->Path().string();
  for (const auto& [body, field] : std::vector<std::pair<json, std::string>>{
           {{{"op", "plan"}, {"source", {{"path", path}}}, {"approval", {{"required", true}}}},
            "$.approval.required"},
           {{{"op", "apply"},
             {"source", {{"path", path}, {"bundle", "b-" + std::string(32, 'a')}}}},
            "$.source"},
           {{{"op", "apply"}, {"source", json::object()}}, "$.source"},
           {{{"op", "apply"}, {"source", {{"path", path}}}, {"variables", {{"1st", "x"}}}},
            "$.variables.1st"},
           {{{"op", "destroy"}, {"source", {{"path", path}}}, {"plan_only", true}},
            "$.plan_only"}}) {
    auto refused = Call("POST", kEnv, body.dump());
    EXPECT_EQ(refused.status, 400) << body.dump();
    EXPECT_EQ(field_of(refused), field) << refused.body;
  }
  Start({});  // not embedded: no server paths
  auto refused = Call("POST", kEnv, module_);
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("embedded"), std::string::npos) << refused.body;
}

}  // namespace
}  // namespace berth::server
