// The Kubernetes client against the real kube-apiserver: every verb, pagination, both patch
// types, delete preconditions, Status errors decoded into kinds and reasons, watches, and the
// request counts.
#include <gtest/gtest.h>

#include "kube/kube_api.h"
#include "kube_test_cluster.h"

namespace berth::kube {
namespace {

using testenv::KubeTestCluster;

json Secret(const std::string& name, const json& labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"stringData", {{"k", "v"}}}};
}

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shared = KubeTestCluster::Shared();
    ASSERT_TRUE(shared) << shared.error().ToString();
    cluster_ = *shared;
    ns_ = std::string("client-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : ns_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(cluster_->CreateNamespace(ns_));
    client_ = ClientFor(cluster_->AdminTls());
  }

  std::unique_ptr<KubeClient> ClientFor(const net::TlsConfig& tls) {
    auto config = KubeConfig::Parse(cluster_->KubeconfigYaml(tls), "/", {});
    EXPECT_TRUE(config) << config.error().ToString();
    return MakeKubeClient(*config);
  }

  KubeTestCluster* cluster_ = nullptr;
  std::string ns_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(KubeClientTest, CreatesGetsPatchesAndDeletes) {
  auto created = client_->Create(kSecrets, ns_, Secret("one"));
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());

  auto merged = client_->Patch(kSecrets, ns_, "one", PatchType::kMerge,
                               {{"metadata", {{"labels", {{"step", "merge"}}}}}}, "berth-test");
  ASSERT_TRUE(merged) << merged.error().ToString();
  EXPECT_EQ((*merged)["metadata"]["labels"]["step"], "merge");

  json intent = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "one"}, {"annotations", {{"berth.dev/owner", "test"}}}}}};
  auto applied = client_->Patch(kSecrets, ns_, "one", PatchType::kApply, intent, "berth-test");
  ASSERT_TRUE(applied) << applied.error().ToString();
  EXPECT_EQ((*applied)["metadata"]["annotations"]["berth.dev/owner"], "test");

  auto read = client_->Get(kSecrets, ns_, "one");
  ASSERT_TRUE(read);
  EXPECT_EQ((*read)["metadata"]["labels"]["step"], "merge");

  auto wrong_uid = client_->Delete(kSecrets, ns_, "one", {.precondition_uid = "not-this-one"});
  ASSERT_FALSE(wrong_uid);
  EXPECT_EQ(wrong_uid.error().kind, ErrorKind::kConflict);
  ASSERT_TRUE(
      client_->Delete(kSecrets, ns_, "one",
                      {.grace_period_seconds = 0, .precondition_uid = (*read)["metadata"]["uid"]}));

  auto gone = client_->Get(kSecrets, ns_, "one");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(gone.error().reason, "NotFound");
}

TEST_F(KubeClientTest, ListsByLabelAcrossPages) {
  for (int i = 0; i < 5; ++i) {
    json labels = {{"app", i % 2 == 0 ? "even" : "odd"}};
    ASSERT_TRUE(client_->Create(kSecrets, ns_, Secret("s" + std::to_string(i), labels)));
  }
  auto even = client_->List(kSecrets, ns_, {.label_selector = "app=even", .page_size = 1});
  ASSERT_TRUE(even) << even.error().ToString();
  EXPECT_EQ(even->items.size(), 3u);
  EXPECT_FALSE(even->resource_version.empty());
  auto counts = client_->Counts();
  EXPECT_GE(counts["list secrets"], 3u);  // one request per page
  EXPECT_EQ(counts["create secrets"], 5u);
}

TEST_F(KubeClientTest, DecodesStatusErrors) {
  ASSERT_TRUE(client_->Create(kSecrets, ns_, Secret("dup")));
  auto again = client_->Create(kSecrets, ns_, Secret("dup"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kAlreadyExists);

  json no_containers = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", "bad"}}},
                        {"spec", {{"containers", json::array()}}}};
  auto invalid = client_->Create(kPods, ns_, no_containers);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(invalid.error().reason, "Invalid");
  ASSERT_FALSE(invalid.error().fields.empty());
  EXPECT_EQ(invalid.error().fields[0].path, "spec.containers");

  auto tls = cluster_->UserTls("nobody", {});
  ASSERT_TRUE(tls);
  auto forbidden = ClientFor(*tls)->Get(kSecrets, ns_, "dup");
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_NE(forbidden.error().message.find("nobody"), std::string::npos);
}

TEST_F(KubeClientTest, TellsAFullQuotaFromAQuotaThatNeedsResources) {
  json quota = {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "q"}}},
                {"spec", {{"hard", {{"secrets", "1"}, {"requests.cpu", "1"}}}}}};
  ASSERT_TRUE(client_->Create(kResourceQuotas, ns_, quota));
  // No controller manager: quota admission enforces only what status.hard says.
  ASSERT_TRUE(client_->Patch(kResourceQuotas, ns_, "q", PatchType::kMerge,
                             {{"status",
                               {{"hard", {{"secrets", "1"}, {"requests.cpu", "1"}}},
                                {"used", {{"secrets", "1"}, {"requests.cpu", "0"}}}}}},
                             "berth-test", "status"));
  auto full = client_->Create(kSecrets, ns_, Secret("over"));
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().kind, ErrorKind::kResourceExhausted);
  EXPECT_EQ(full.error().reason, kReasonQuotaExceeded);

  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "no-requests"}}},
              {"spec", {{"containers", {{{"name", "main"}, {"image", "x"}}}}}}};
  auto needs = client_->Create(kPods, ns_, pod);
  ASSERT_FALSE(needs);
  EXPECT_EQ(needs.error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_EQ(needs.error().reason, kReasonQuotaNeedsResources);
}

TEST_F(KubeClientTest, WatchesFromAListsVersion) {
  ASSERT_TRUE(client_->Create(kSecrets, ns_, Secret("before")));
  auto list = client_->List(kSecrets, ns_, {});
  ASSERT_TRUE(list);
  ASSERT_TRUE(client_->Create(kSecrets, ns_, Secret("after")));
  std::vector<std::string> seen;
  auto watched = client_->Watch(
      kSecrets, ns_, {.resource_version = list->resource_version, .timeout_seconds = 5},
      [&](const WatchEvent& event) {
        if (event.type != "BOOKMARK")
          seen.push_back(event.type + " " + event.object["metadata"]["name"].get<std::string>());
        return seen.empty();  // stop after the first real event
      },
      {});
  EXPECT_EQ(watched.error().kind, ErrorKind::kCancelled);
  EXPECT_EQ(seen, std::vector<std::string>{"ADDED after"});
  EXPECT_EQ(client_->Counts()["watch secrets"], 1u);
}

TEST_F(KubeClientTest, AWatchFromACompactedVersionIsExpired) {
  json map = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "history"}}}};
  auto first = client_->Create(kConfigMaps, ns_, map);
  ASSERT_TRUE(first);
  for (const char* value : {"a", "b"}) {  // history past the first version, then compacted
    ASSERT_TRUE(client_->Patch(kConfigMaps, ns_, "history", PatchType::kMerge,
                               {{"data", {{"k", value}}}}, "berth-test"));
  }
  ASSERT_TRUE(cluster_->CompactEtcd());
  auto watched = client_->Watch(
      kConfigMaps, ns_,
      {.resource_version = (*first)["metadata"]["resourceVersion"], .timeout_seconds = 5},
      [](const WatchEvent&) { return true; }, {});
  ASSERT_FALSE(watched);
  EXPECT_EQ(watched.error().reason, kReasonExpired) << watched.error().ToString();
}

TEST_F(KubeClientTest, MetricsCountRequestsByVerbAndResource) {
  ASSERT_TRUE(client_->Create(kSecrets, ns_, Secret("m")));
  ASSERT_TRUE(client_->Get(kSecrets, ns_, "m"));
  std::string text = client_->MetricsText();
  EXPECT_NE(text.find("berth_kube_requests_total{verb=\"create\",resource=\"secrets\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("berth_kube_requests_total{verb=\"get\",resource=\"secrets\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace berth::kube
