// API tokens beyond the first, through the API as berthd builds it: each scope allows what it
// says and nothing more, a token's secret is shown once, an expired or revoked token opens
// nothing, a token that cannot approve cannot skip approval, and a runner Pod weaker than the
// hardened default is an admin's alone to define.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api_fixture.h"

namespace berth::server {
namespace {

using nlohmann::json;

class ApiTokens : public ApiFixture {
 protected:
  ApiOptions Options() override { return {.clock = &clock_, .allow_server_paths = true}; }

  // A new token's answer (secret included), made by the admin token.
  json Make(const json& body) {
    auto made = Call("POST", "/orgs/acme/tokens", body.dump());
    EXPECT_EQ(made.status, 201) << made.body;
    return json::parse(made.body, nullptr, false);
  }
  std::string Secret(const std::vector<std::string>& scopes) {
    return Make({{"scopes", scopes}})["secret"].get<std::string>();
  }
  std::string Deployment(const std::string& token) {
    json body = {{"op", "apply"}, {"source", {{"path", dir_->Path().string()}}}};
    auto created = CallAs(token, "POST", kDeployments, body.dump());
    EXPECT_EQ(created.status, 201) << created.body;
    return created.body;
  }
  static std::string Message(const net::ServerResponse& r) {
    return json::parse(r.body, nullptr, false)["error"].value("message", "");
  }

  const std::string kDeployments = "/orgs/acme/projects/web/envs/dev/deployments";
  ManualClock clock_;
};

TEST_F(ApiTokens, ASecretIsShownOnceAndNeverListed) {
  json made = Make({{"scopes", {"deploy", "read"}}, {"description", "ci"}});
  std::string secret = made["secret"];
  EXPECT_TRUE(secret.starts_with("berth_"));
  EXPECT_EQ(made["scopes"], json({"read", "deploy"}));
  EXPECT_TRUE(made["expires_at"].is_null());
  EXPECT_FALSE(made["created_by"].is_null());

  auto listed = Call("GET", "/orgs/acme/tokens");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body.find(secret), std::string::npos);
  EXPECT_EQ(listed.body.find("secret"), std::string::npos);
  bool found = false;
  const json items = json::parse(listed.body)["items"];
  for (const json& t : items) found |= t["id"] == made["id"];
  EXPECT_TRUE(found) << listed.body;
}

TEST_F(ApiTokens, EachScopeAllowsWhatItSaysAndNothingMore) {
  std::string read = Secret({"read"}), deploy = Secret({"deploy"}),
              configure = Secret({"configure"}), approve = Secret({"approve"});
  // Reading: every scope.
  for (const std::string& t : {read, deploy, configure, approve})
    EXPECT_EQ(CallAs(t, "GET", "/orgs/acme/projects").status, 200);
  // Configuration: configure (and admin) only; the 403 names the scope it needs.
  auto refused = CallAs(deploy, "POST", "/orgs/acme/projects", R"({"id":"api"})");
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(Message(refused).find("needs scope configure"), std::string::npos) << refused.body;
  EXPECT_EQ(CallAs(read, "DELETE", "/orgs/acme/projects/web").status, 403);
  EXPECT_EQ(CallAs(configure, "POST", "/orgs/acme/projects", R"({"id":"api"})").status, 201);
  // Deployments: deploy only.
  json body = {{"op", "plan"}, {"source", {{"path", dir_->Path().string()}}}};
  EXPECT_EQ(CallAs(read, "POST", kDeployments, body.dump()).status, 403);
  EXPECT_EQ(CallAs(configure, "POST", kDeployments, body.dump()).status, 403);
  EXPECT_EQ(CallAs(deploy, "POST", kDeployments, body.dump()).status, 201);
  // Tokens and the state's lock: admin only.
  for (const std::string& t : {read, deploy, configure, approve}) {
    EXPECT_EQ(CallAs(t, "GET", "/orgs/acme/tokens").status, 403);
    EXPECT_EQ(CallAs(t, "POST", "/orgs/acme/tokens", R"({"scopes":["admin"]})").status, 403);
    EXPECT_EQ(
        CallAs(t, "POST", "/orgs/acme/projects/web/envs/dev/state/unlock", R"({"reason":"x"})")
            .status,
        403);
  }
}

// Separation of duties: the CI's deploy token queues an apply that stops at its plan whatever
// it asked, cannot approve it, and is named on it.
TEST_F(ApiTokens, ATokenThatCannotApproveCannotSkipApproval) {
  json made = Make({{"scopes", {"deploy"}}});
  std::string deploy = made["secret"];
  json d = json::parse(Deployment(deploy));
  EXPECT_EQ(d["approval"]["required"], true);
  EXPECT_EQ(d["created_by"], made["id"]);
  auto approve =
      CallAs(deploy, "POST", "/orgs/acme/deployments/" + d["id"].get<std::string>() + "/approve",
             R"({"plan_hash":"sha256:00"})");
  EXPECT_EQ(approve.status, 403);
  EXPECT_NE(Message(approve).find("needs scope approve"), std::string::npos) << approve.body;

  std::string both = Secret({"deploy", "approve"});
  EXPECT_EQ(json::parse(Deployment(both))["approval"]["required"], false);
}

// Plans, states and sensitive outputs hold secrets in clear: a read token sees none of them.
TEST_F(ApiTokens, AReadTokenReachesNoSecret) {
  std::string read = Secret({"read"}), deploy = Secret({"deploy"});
  std::string id = json::parse(Deployment(deploy))["id"];
  auto sensitive = CallAs(read, "GET", "/orgs/acme/deployments/" + id + "/outputs?sensitive=true");
  EXPECT_EQ(sensitive.status, 403);
  EXPECT_NE(Message(sensitive).find("sensitive outputs needs scope deploy"), std::string::npos);
  EXPECT_EQ(CallAs(read, "GET", "/orgs/acme/deployments/" + id + "/artifacts/plan").status, 403);
  EXPECT_EQ(CallAs(read, "GET", "/orgs/acme/projects/web/envs/dev/state/versions/1").status, 403);
  // Past the scope, the deploy token meets what is there: no outputs yet.
  EXPECT_EQ(
      CallAs(deploy, "GET", "/orgs/acme/deployments/" + id + "/outputs?sensitive=true").status,
      404);
  // Only true or false: another value is no way around the scope, nor quietly false (found by
  // schemathesis).
  for (const char* value : {"TRUE", "1", "yes", "%C2%BD"}) {
    auto odd = CallAs(read, "GET", "/orgs/acme/deployments/" + id + "/outputs?sensitive=" + value);
    EXPECT_EQ(odd.status, 400) << value;
    EXPECT_NE(odd.body.find("\"path\":\"sensitive\""), std::string::npos) << odd.body;
  }
}

TEST_F(ApiTokens, AnExpiredOrRevokedTokenOpensNothing) {
  json made = Make({{"scopes", {"read"}}, {"expires_in_seconds", 7200}});
  std::string secret = made["secret"];
  EXPECT_FALSE(made["expires_at"].is_null());
  EXPECT_EQ(CallAs(secret, "GET", "/orgs/acme/projects").status, 200);
  clock_.Advance(std::chrono::hours(2));
  auto expired = CallAs(secret, "GET", "/orgs/acme/projects");
  EXPECT_EQ(expired.status, 401);
  EXPECT_NE(Message(expired).find("expired at"), std::string::npos) << expired.body;

  json other = Make({{"scopes", {"read"}}});
  EXPECT_EQ(CallAs(other["secret"], "GET", "/orgs/acme/projects").status, 200);
  EXPECT_EQ(Call("DELETE", "/orgs/acme/tokens/" + other["id"].get<std::string>()).status, 204);
  EXPECT_EQ(CallAs(other["secret"], "GET", "/orgs/acme/projects").status, 401);
  EXPECT_EQ(Call("DELETE", "/orgs/acme/tokens/" + other["id"].get<std::string>()).status, 404);
}

TEST_F(ApiTokens, ABadTokenRequestNamesItsField) {
  struct Case {
    std::string body, path;
  };
  const Case cases[] = {
      {R"({"scopes":[]})", "$.scopes"},
      {R"({"scopes":["root"]})", "$.scopes[0]"},
      {R"({"scopes":["read","read"]})", "$.scopes[1]"},
      {R"({"scopes":["read"],"expires_in_seconds":"2h"})", "$.expires_in_seconds"},
      {R"({"scopes":["read"],"expires_in_seconds":10})", "$.expires_in_seconds"},
      {R"({"scopes":["read"],"expires_in_seconds":31622401})", "$.expires_in_seconds"},
      {R"({"scopes":["read"],"owner":"me"})", "$.owner"},
  };
  for (const auto& c : cases) {
    auto r = Call("POST", "/orgs/acme/tokens", c.body);
    ASSERT_EQ(r.status, 400) << c.body;
    EXPECT_NE(r.body.find(c.path), std::string::npos) << c.body << " -> " << r.body;
  }
}

// What relaxes the hardened Pod is refused for all but admin, each field named; the same
// runner without it is anyone's with configure.
TEST_F(ApiTokens, OnlyAnAdminDefinesARunnerWhosePodIsWeakerThanTheHardenedDefault) {
  std::string configure = Secret({"configure"});
  auto runner = [](const json& spec) {
    return json{{"id", "k8s"},
                {"runner_configuration",
                 {{"type", "kubernetes"},
                  {"job", {{"namespace", "runs"}, {"pod_template", {{"spec", spec}}}}}}},
                {"state_storage_configuration", {{"type", "berth"}}}}
        .dump();
  };
  json relaxed = {
      {"volumes",
       {{{"name", "docker"}, {"hostPath", {{"path", "/var/run/docker.sock"}}}},
        {{"name", "tokens"}, {"secret", {{"secretName", "berth-run-other"}}}},
        {{"name", "shared"}, {"persistentVolumeClaim", {{"claimName", "state"}}}},
        {{"name", "projected"}, {"projected", {{"sources", json::array()}}}}}},
      {"env", {{{"name", "K"}, {"valueFrom", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}}}}},
      {"envFrom", {{{"secretRef", {{"name", "s"}}}}}},
      {"initContainers",
       {{{"name", "peek"},
         {"image", "busybox"},
         {"envFrom", {{{"configMapRef", {{"name", "c"}}}}, {{"secretRef", {{"name", "s"}}}}}}}}},
      {"securityContext", {{"privileged", true}, {"runAsUser", 0}}},
  };
  auto refused = CallAs(configure, "POST", "/orgs/acme/runners", runner(relaxed));
  ASSERT_EQ(refused.status, 403) << refused.body;
  const std::string prefix = "$.runner_configuration.job.pod_template.spec.";
  for (const char* field :
       {"volumes[0].hostPath", "volumes[1].secret", "volumes[2].persistentVolumeClaim",
        "volumes[3].projected", "env[0].valueFrom.secretKeyRef", "envFrom[0].secretRef",
        "initContainers[0].envFrom[1].secretRef", "securityContext.privileged",
        "securityContext.runAsUser", "securityContext.runAsNonRoot",
        "securityContext.allowPrivilegeEscalation", "securityContext.capabilities.drop",
        "securityContext.seccompProfile.type"}) {
    EXPECT_NE(refused.body.find(prefix + field), std::string::npos)
        << field << ": " << refused.body;
  }
  json strict = {{"securityContext",
                  {{"runAsNonRoot", true},
                   {"runAsUser", 1000},
                   {"allowPrivilegeEscalation", false},
                   {"readOnlyRootFilesystem", true},
                   {"capabilities", {{"drop", {"ALL"}}}},
                   {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
                 {"volumes",
                  {{{"name", "cache"}, {"emptyDir", json::object()}},
                   {{"name", "settings"}, {"configMap", {{"name", "runner-settings"}}}}}},
                 {"envFrom", {{{"configMapRef", {{"name", "runner-settings"}}}}}}};
  EXPECT_EQ(CallAs(configure, "POST", "/orgs/acme/runners", runner(strict)).status, 201);
  EXPECT_EQ(Call("PUT", "/orgs/acme/runners/k8s", runner(relaxed)).status, 200);
  // Nor can configure edit an admin's relaxed runner into another relaxed one.
  EXPECT_EQ(CallAs(configure, "PUT", "/orgs/acme/runners/k8s", runner(relaxed)).status, 403);
}

// What a runner reaches beyond its runs is an admin's too: a local runner's work_dir (where a
// root berthd makes, chowns and prunes folders: /run would be a daemon's) and a Kubernetes
// runner's service account (its API rights).
TEST_F(ApiTokens, OnlyAnAdminPutsRunFoldersOrServiceAccountsWhereARunnerChooses) {
  std::string configure = Secret({"configure"});
  const json local = {{"id", "local-run"},
                      {"runner_configuration", {{"type", "local"}, {"work_dir", "/run"}}},
                      {"state_storage_configuration", {{"type", "berth"}}}};
  const json k8s = {{"id", "k8s-sa"},
                    {"runner_configuration",
                     {{"type", "kubernetes"},
                      {"job", {{"namespace", "runs"}, {"service_account", "cluster-admin-sa"}}}}},
                    {"state_storage_configuration", {{"type", "berth"}}}};
  for (const auto& [body, field] : {std::pair{local, "$.runner_configuration.work_dir"},
                                    std::pair{k8s, "$.runner_configuration.job.service_account"}}) {
    auto refused = CallAs(configure, "POST", "/orgs/acme/runners", body.dump());
    EXPECT_EQ(refused.status, 403) << refused.body;
    EXPECT_NE(refused.body.find(field), std::string::npos) << refused.body;
    EXPECT_NE(refused.body.find("admin"), std::string::npos) << refused.body;
    EXPECT_EQ(Call("POST", "/orgs/acme/runners", body.dump()).status, 201) << field;
  }
  json plain = local;
  plain["id"] = "local-plain";
  plain["runner_configuration"].erase("work_dir");
  EXPECT_EQ(CallAs(configure, "POST", "/orgs/acme/runners", plain.dump()).status, 201);
}

}  // namespace
}  // namespace berth::server
