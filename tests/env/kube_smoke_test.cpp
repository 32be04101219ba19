// The test apiserver is real: it answers /readyz, stores a Pod and returns it, authenticates
// client certificates and enforces RBAC.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube_test_cluster.h"
#include "sys/files.h"

namespace berth::testenv {
namespace {

using nlohmann::json;

net::HttpRequest Json(std::string method, std::string url, const json& body = nullptr) {
  net::HttpRequest request{.method = std::move(method), .url = std::move(url)};
  request.headers = {{"Accept", "application/json"}, {"Content-Type", "application/json"}};
  if (!body.is_null()) request.body = body.dump();
  return request;
}

class KubeSmoke : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shared = KubeTestCluster::Shared();
    ASSERT_TRUE(shared) << shared.error().ToString();
    cluster_ = *shared;
    admin_ = net::MakeCurlHttpClient(cluster_->AdminTls());
  }
  KubeTestCluster* cluster_ = nullptr;
  std::unique_ptr<net::HttpClient> admin_;
};

TEST_F(KubeSmoke, ReadyzAnswersOk) {
  auto r = admin_->Send({.url = cluster_->Url() + "/readyz"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
}

TEST_F(KubeSmoke, APodIsCreatedAndReadBack) {
  const std::string ns = cluster_->Url() + "/api/v1/namespaces/default";
  // No controller manager runs, so the ServiceAccount admission plugin finds no `default`
  // account unless the test makes it.
  auto sa = admin_->Send(Json(
      "POST", ns + "/serviceaccounts",
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "default"}}}}));
  ASSERT_TRUE(sa);
  ASSERT_TRUE(sa->status == 201 || sa->status == 409) << sa->body;

  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "smoke"}, {"labels", {{"app", "berth-smoke"}}}}},
              {"spec", {{"containers", {{{"name", "main"}, {"image", "berth/runner:test"}}}}}}};
  auto created = admin_->Send(Json("POST", ns + "/pods", pod));
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;

  auto read = admin_->Send(Json("GET", ns + "/pods/smoke"));
  ASSERT_TRUE(read);
  ASSERT_EQ(read->status, 200) << read->body;
  auto body = json::parse(read->body);
  EXPECT_EQ(body["metadata"]["labels"]["app"], "berth-smoke");
  EXPECT_EQ(body["spec"]["containers"][0]["image"], "berth/runner:test");
  EXPECT_EQ(body["status"]["phase"], "Pending");  // no kubelet here

  auto deleted = admin_->Send(Json("DELETE", ns + "/pods/smoke"));
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200) << deleted->body;
}

TEST_F(KubeSmoke, AnonymousRequestsAreRefused) {
  auto anonymous = net::MakeCurlHttpClient({.ca_pem = cluster_->CaPem()});
  auto r = anonymous->Send({.url = cluster_->Url() + "/api/v1/namespaces/default/pods"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;  // system:anonymous, which RBAC grants nothing
}

TEST_F(KubeSmoke, RbacForbidsAUserWithoutABinding) {
  auto tls = cluster_->UserTls("someone", {});
  ASSERT_TRUE(tls);
  auto user = net::MakeCurlHttpClient(*tls);
  auto r = user->Send({.url = cluster_->Url() + "/api/v1/namespaces/default/secrets"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("User \\\"someone\\\""), std::string::npos) << r->body;
}

TEST_F(KubeSmoke, TheAdminKubeconfigNamesTheServer) {
  auto kubeconfig = sys::ReadFile(cluster_->AdminKubeconfig());
  ASSERT_TRUE(kubeconfig);
  EXPECT_NE(kubeconfig->find("server: " + cluster_->Url()), std::string::npos);
}

}  // namespace
}  // namespace berth::testenv
