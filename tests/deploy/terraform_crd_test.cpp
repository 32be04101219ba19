// deploy/kubernetes/crds/terraforms.berth.dev.yaml on the real test apiserver: it is accepted
// and established, a whole object is stored with its defaults, every rule the schema states
// refuses its hostile or mistaken input naming the field, unknown fields are refused under
// strict validation (what kubectl asks for), and the printer columns and status subresource
// are there for the controller and for `kubectl get tf`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/body.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth {
namespace {

using nlohmann::json;

constexpr char kCrds[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
constexpr char kNamespace[] = "crd-test";

class TerraformCrd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster) << cluster.error().ToString();
    shared_cluster = *cluster;
    shared_http = net::MakeCurlHttpClient(shared_cluster->AdminTls()).release();
    auto text =
        sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes/crds/terraforms.berth.dev.yaml");
    ASSERT_TRUE(text);
    auto crd = cli::YamlToJson(*text);
    ASSERT_TRUE(crd) << crd.error().ToString();
    auto made = Send("POST", kCrds, *crd);
    ASSERT_TRUE(made.status == 201 || made.status == 409) << made.body;
    bool established = false;
    for (int i = 0; i < 100 && !established; ++i) {
      auto got = Send("GET", std::string(kCrds) + "/terraforms.berth.dev");
      json conditions = json::parse(got.body, nullptr, false)["status"].value("conditions", json());
      for (const json& c : conditions.is_array() ? conditions : json::array())
        established = established || (c["type"] == "Established" && c["status"] == "True");
      if (!established) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(established) << "the CRD was not established";
    ASSERT_TRUE(shared_cluster->CreateNamespace(kNamespace));
  }

  static net::HttpResponse Send(const std::string& method, const std::string& path,
                                const json& body = nullptr,
                                const std::string& accept = "application/json") {
    net::HttpRequest request{.method = method, .url = shared_cluster->Url() + path};
    request.headers = {
        {"Accept", accept},
        {"Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json"}};
    if (!body.is_null()) request.body = body.dump();
    auto response = shared_http->Send(request);
    EXPECT_TRUE(response) << response.error().ToString();
    return response ? *response : net::HttpResponse{};
  }

  static std::string Collection() {
    return std::string("/apis/berth.dev/v1alpha1/namespaces/") + kNamespace + "/terraforms";
  }

  // A Terraform object with the given spec (a Git source unless the spec names one).
  static json Object(const std::string& name, json spec) {
    if (!spec.contains("git") && !spec.contains("sourceRef"))
      spec["git"] = {{"url", "https://git.example.com/infra.git"}};
    return {{"apiVersion", "berth.dev/v1alpha1"},
            {"kind", "Terraform"},
            {"metadata", {{"name", name}}},
            {"spec", spec}};
  }

  // Created under strict field validation, as kubectl creates it.
  static net::HttpResponse Create(const json& object) {
    return Send("POST", Collection() + "?fieldValidation=Strict", object);
  }

  static testenv::KubeTestCluster* shared_cluster;
  static net::HttpClient* shared_http;
};

testenv::KubeTestCluster* TerraformCrd::shared_cluster = nullptr;
net::HttpClient* TerraformCrd::shared_http = nullptr;

TEST_F(TerraformCrd, AWholeObjectIsStoredWithItsDefaults) {
  json spec = {
      {"git",
       {{"url", "https://git.example.com/infra.git"},
        {"ref", {{"branch", "main"}}},
        {"secretRef", {{"name", "git-auth"}}}}},
      {"path", "envs/prod"},
      {"vars",
       {{{"name", "region"}, {"value", "eu-west-1"}}, {{"name", "sizes"}, {"value", {{"a", 1}}}}}},
      {"varsFrom", {{{"kind", "Secret"}, {"name", "creds"}, {"varsKeys", {"token"}}}}},
      {"approvePlan", "auto"},
      {"interval", "10m"},
      {"retryInterval", "1m30s"},
      {"driftDetection", {{"disabled", false}}},
      {"writeOutputsToSecret", {{"name", "infra-outputs"}, {"outputs", {"vpc_id"}}}},
      {"cliConfigSecretRef", {{"name", "tfrc"}}},
      {"fileMappings",
       {{{"location", "home"},
         {"path", ".aws/credentials"},
         {"secretRef", {{"name", "aws"}, {"key", "credentials"}}}}}},
      {"dependsOn", {{{"name", "network"}}}},
      {"runner",
       {{"image", "registry.example.com/berth/runner:1"},
        {"serviceAccountName", "tf-runner"},
        {"terminationGracePeriodSeconds", 60},
        {"podTemplate",
         {{"metadata", {{"labels", {{"team", "infra"}}}}},
          {"spec",
           {{"env", {{{"name", "TF_LOG"}, {"value", "INFO"}}}},
            {"nodeSelector", {{"workload", "infra"}}},
            {"tolerations", {{{"key", "infra"}, {"operator", "Exists"}}}},
            {"priorityClassName", "infra-runs"},
            {"resources", {{"requests", {{"cpu", "250m"}, {"memory", "512Mi"}}}}}}}}}}}};
  auto created = Create(Object("whole", spec));
  ASSERT_EQ(created.status, 201) << created.body;
  json stored = json::parse(created.body)["spec"];
  EXPECT_EQ(stored["deletionPolicy"], "retain");
  EXPECT_EQ(stored["runner"]["binary"], "auto");
  EXPECT_EQ(stored["runner"]["alwaysCleanup"], true);
  EXPECT_EQ(stored["vars"][1]["value"]["a"], 1);
  EXPECT_EQ(stored["runner"]["podTemplate"]["spec"]["resources"]["requests"]["cpu"], "250m");
}

TEST_F(TerraformCrd, EveryRuleRefusesNamingTheField) {
  struct Case {
    std::string name;
    json spec;
    std::string says;
  } cases[] = {
      {"two-sources",
       {{"git", {{"url", "https://x/y.git"}}},
        {"sourceRef", {{"kind", "GitRepository"}, {"name", "y"}}}},
       "exactly one of sourceRef and git"},
      {"flux-kind",
       {{"sourceRef", {{"kind", "HelmRepository"}, {"name", "y"}}}},
       "spec.sourceRef.kind"},
      {"file-url", {{"git", {{"url", "file:///etc/passwd"}}}}, "spec.git.url"},
      {"two-refs",
       {{"git", {{"url", "https://x/y.git"}, {"ref", {{"branch", "a"}, {"tag", "b"}}}}}},
       "spec.git.ref"},
      {"short-commit",
       {{"git", {{"url", "https://x/y.git"}, {"ref", {{"commit", "abc"}}}}}},
       "spec.git.ref.commit"},
      {"up-path", {{"path", "envs/../../etc"}}, "spec.path"},
      {"absolute-path", {{"path", "/etc"}}, "spec.path"},
      {"approve-yes", {{"approvePlan", "yes"}}, "spec.approvePlan"},
      {"interval-words", {{"interval", "10 minutes"}}, "spec.interval"},
      {"deletion", {{"deletionPolicy", "delete"}}, "spec.deletionPolicy"},
      {"binary", {{"runner", {{"binary", "pulumi"}}}}, "spec.runner.binary"},
      {"grace",
       {{"runner", {{"terminationGracePeriodSeconds", -1}}}},
       "spec.runner.terminationGracePeriodSeconds"},
      {"mapping-escape",
       {{"fileMappings",
         {{{"location", "home"},
           {"path", "../../root/.ssh/authorized_keys"},
           {"secretRef", {{"name", "s"}, {"key", "k"}}}}}}},
       "spec.fileMappings[0].path"},
      {"var-name", {{"vars", {{{"name", "a b"}, {"value", 1}}}}}, "spec.vars[0].name"},
      {"unknown-spec-field", {{"bogus", true}}, "spec.bogus"},
      {"host-network",
       {{"runner", {{"podTemplate", {{"spec", {{"hostNetwork", true}}}}}}}},
       "spec.runner.podTemplate.spec.hostNetwork"},
  };
  for (const auto& c : cases) {
    auto refused = Create(Object("refused-" + c.name, c.spec));
    EXPECT_TRUE(refused.status == 422 || refused.status == 400) << c.name << ": " << refused.body;
    EXPECT_NE(refused.body.find(c.says), std::string::npos) << c.name << ": " << refused.body;
  }
  auto none = Send("POST", Collection() + "?fieldValidation=Strict",
                   {{"apiVersion", "berth.dev/v1alpha1"},
                    {"kind", "Terraform"},
                    {"metadata", {{"name", "no-source"}}},
                    {"spec", {{"path", "."}}}});
  EXPECT_EQ(none.status, 422) << none.body;
  EXPECT_NE(none.body.find("exactly one of sourceRef and git"), std::string::npos) << none.body;
}

TEST_F(TerraformCrd, TheStatusSubresourceFeedsThePrinterColumns) {
  auto created = Create(Object("printed", {{"approvePlan", "plan-main-3f2a"}}));
  ASSERT_EQ(created.status, 201) << created.body;
  json object = json::parse(created.body);
  object["status"] = {{"binary", {{"name", "tofu"}, {"version", "1.12.6"}}},
                      {"conditions",
                       {{{"type", "Ready"},
                         {"status", "False"},
                         {"reason", "PlanPending"},
                         {"message", "plan-main-3f2a waits for approval"},
                         {"lastTransitionTime", "2026-12-03T00:00:00Z"}}}}};
  auto status = Send("PUT", Collection() + "/printed/status", object);
  ASSERT_EQ(status.status, 200) << status.body;
  // A write to the object itself does not change its status: only /status does.
  auto spec_write =
      Send("PATCH", Collection() + "/printed", {{"status", {{"binary", {{"name", "x"}}}}}});
  ASSERT_EQ(spec_write.status, 200) << spec_write.body;
  EXPECT_EQ(json::parse(spec_write.body)["status"]["binary"]["name"], "tofu");

  auto table = Send("GET", Collection() + "/printed", nullptr,
                    "application/json;as=Table;v=v1;g=meta.k8s.io");
  ASSERT_EQ(table.status, 200) << table.body;
  json doc = json::parse(table.body);
  std::vector<std::string> columns;
  for (const json& c : doc["columnDefinitions"]) columns.push_back(c["name"]);
  EXPECT_EQ(columns, (std::vector<std::string>{"Name", "Ready", "Status", "Binary", "Age"}));
  json cells = doc["rows"][0]["cells"];
  EXPECT_EQ(cells[1], "False");
  EXPECT_EQ(cells[2], "plan-main-3f2a waits for approval");
  EXPECT_EQ(cells[3], "tofu");
}

}  // namespace
}  // namespace berth
