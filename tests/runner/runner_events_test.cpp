// The runner posts Kubernetes Events about its run with its service account's token, on the
// real test apiserver; without the right to, the run goes on and the runner gives up quietly.
#include <gtest/gtest.h>

#include <set>

#include "kube_test_cluster.h"
#include "runner_harness.h"
#include "sys/files.h"

namespace berth::testing {
namespace {

using nlohmann::json;

class RunnerEvents : public ::testing::Test {
 protected:
  static constexpr const char* kNamespace = "team-events";

  void SetUp() override {
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    cluster_ = *cluster;
    admin_ = net::MakeCurlHttpClient(cluster_->AdminTls());
    auto h = RunnerHarness::Create();
    ASSERT_TRUE(h);
    h_.emplace(std::move(*h));
    Create("/api/v1/namespaces",
           {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}});
  }

  json Send(const std::string& method, const std::string& path, const json& body = nullptr) {
    net::HttpRequest request{.method = method, .url = cluster_->Url() + path};
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
    if (!body.is_null()) request.body = body.dump();
    auto r = admin_->Send(request);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  void Create(const std::string& path, const json& body) { Send("POST", path, body); }

  // A service account (with the events Role bound when allowed) and a folder holding its
  // token and the cluster CA, laid out as the kubelet mounts them.
  std::string ServiceAccount(const std::string& name, bool allowed) {
    std::string ns = std::string("/api/v1/namespaces/") + kNamespace;
    Create(ns + "/serviceaccounts",
           {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}}}});
    if (allowed) {
      std::string rbac = std::string("/apis/rbac.authorization.k8s.io/v1/namespaces/") + kNamespace;
      Create(rbac + "/roles", {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                               {"kind", "Role"},
                               {"metadata", {{"name", "runner-events"}}},
                               {"rules",
                                {{{"apiGroups", {"events.k8s.io"}},
                                  {"resources", {"events"}},
                                  {"verbs", {"create"}}}}}});
      Create(rbac + "/rolebindings",
             {{"apiVersion", "rbac.authorization.k8s.io/v1"},
              {"kind", "RoleBinding"},
              {"metadata", {{"name", name + "-events"}}},
              {"roleRef",
               {{"apiGroup", "rbac.authorization.k8s.io"},
                {"kind", "Role"},
                {"name", "runner-events"}}},
              {"subjects",
               {{{"kind", "ServiceAccount"}, {"name", name}, {"namespace", kNamespace}}}}});
    }
    json token = Send("POST", ns + "/serviceaccounts/" + name + "/token",
                      {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenRequest"},
                       {"spec", json::object()}});
    std::string dir = (h_->Root() / ("sa-" + name)).string();
    std::filesystem::create_directories(dir);
    EXPECT_TRUE(sys::WriteFileAtomic(dir + "/token", token["status"]["token"].get<std::string>()));
    EXPECT_TRUE(sys::WriteFileAtomic(dir + "/ca.crt", cluster_->CaPem()));
    return dir;
  }

  std::vector<std::string> PodEnvironment(const std::string& account_dir) {
    std::string port = cluster_->Url().substr(cluster_->Url().rfind(':') + 1);
    return {"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=" + port,
            "BERTH_SERVICE_ACCOUNT_DIR=" + account_dir, "POD_NAME=net-plan-pod"};
  }

  RunnerRun Plan(const std::string& name, const std::string& account_dir) {
    auto module = h_->Module("hello");
    return h_->Run({"--op=plan", "--module=" + module.string(), "--name=" + name,
                    "--workdir=" + (h_->Root() / ("work-" + name)).string(),
                    "--event-object=Terraform/" + std::string(kNamespace) + "/" + name,
                    "--job-name=" + name + "-plan"},
                   PodEnvironment(account_dir));
  }

  testenv::KubeTestCluster* cluster_ = nullptr;
  std::unique_ptr<net::HttpClient> admin_;
  std::optional<RunnerHarness> h_;
};

TEST_F(RunnerEvents, ARunPostsItsStoryAsEvents) {
  auto run = Plan("net", ServiceAccount("runner", true));
  ASSERT_EQ(run.exit_code, 0) << run.log;
  json events =
      Send("GET", std::string("/apis/events.k8s.io/v1/namespaces/") + kNamespace + "/events");
  std::multiset<std::string> reasons;
  for (const auto& e : events["items"]) {
    if (e["regarding"]["name"] != "net") continue;
    reasons.insert(e["reason"].get<std::string>());
    EXPECT_EQ(e["reportingController"], "berth.dev/runner");
    EXPECT_EQ(e["reportingInstance"], "net-plan-pod");
    EXPECT_EQ(e["regarding"]["kind"], "Terraform");
    EXPECT_EQ(e["action"], "Run net-plan");
    if (e["reason"] == "PlanSummary") {
      EXPECT_NE(e["note"].get<std::string>().find("1 to add"), std::string::npos) << e.dump();
    }
  }
  EXPECT_EQ(reasons.count("RunStarted"), 1u)
      << run.log.substr(run.log.size() > 2000 ? run.log.size() - 2000 : 0);
  EXPECT_EQ(reasons.count("RunFinished"), 1u);
  EXPECT_EQ(reasons.count("PlanSummary"), 1u);
  EXPECT_EQ(reasons.count("StepStarted"), reasons.count("StepSucceeded"));
  EXPECT_EQ(reasons.count("StepStarted"), 2u);  // init, plan (the plan file is read, not shown)
  EXPECT_EQ(reasons.count("StepFailed"), 0u);
}

TEST_F(RunnerEvents, WithoutTheRightToPostTheRunGoesOnAndTheRunnerGivesUp) {
  auto run = Plan("denied", ServiceAccount("no-rights", false));
  EXPECT_EQ(run.exit_code, 0) << run.log;
  EXPECT_TRUE(run.result["error"].is_null());
  EXPECT_NE(run.log.find("events: giving up after 3 failed posts"), std::string::npos) << run.log;
}

TEST_F(RunnerEvents, WithoutAnApiServerTheRunnerSaysSoAndRuns) {
  auto module = h_->Module("hello");
  auto run = h_->Run({"--op=validate", "--module=" + module.string(), "--name=alone",
                      "--workdir=" + (h_->Root() / "work-alone").string(),
                      "--event-object=Terraform/team/alone"});
  EXPECT_EQ(run.exit_code, 0) << run.log;
  EXPECT_NE(run.log.find("KUBERNETES_SERVICE_HOST/PORT are not set"), std::string::npos);
}

}  // namespace
}  // namespace berth::testing
