// The informer against the real apiserver: one list then one watch, every change delivered
// once across a cut watch, and a relist (delivering only the differences) when the watch's
// version was compacted away while it was cut.
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <thread>

#include "fault_injecting_kube_api.h"
#include "kube_test_cluster.h"

namespace berth::kube {
namespace {

using testenv::FaultInjectingKubeApi;
using testenv::KubeTestCluster;

json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"v", value}}}};
}

// What the handler saw, in order: "TYPE name=value".
class Recorder {
 public:
  void Record(const std::string& type, const json& object) {
    std::string line = type + " " + object["metadata"]["name"].get<std::string>() + "=" +
                       object["data"].value("v", "");
    MutexLock lock(mutex_);
    lines_.push_back(line);
    changed_.notify_all();
  }
  // Waits (bounded) until n lines are in; returns them.
  std::vector<std::string> WaitFor(size_t n) {
    MutexLock lock(mutex_);
    changed_.wait_for(mutex_, std::chrono::seconds(30),
                      [&]() REQUIRES(mutex_) { return lines_.size() >= n; });
    return lines_;
  }

 private:
  Mutex mutex_;
  std::condition_variable_any changed_;
  std::vector<std::string> lines_ GUARDED_BY(mutex_);
};

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shared = KubeTestCluster::Shared();
    ASSERT_TRUE(shared) << shared.error().ToString();
    cluster_ = *shared;
    ns_ =
        std::string("informer-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : ns_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(cluster_->CreateNamespace(ns_));
    auto admin = cluster_->AdminClient();
    ASSERT_TRUE(admin) << admin.error().ToString();
    client_ = std::move(*admin);
    faulty_ = std::make_unique<FaultInjectingKubeApi>(*client_);
    informer_ =
        std::make_unique<Informer>(*faulty_, kConfigMaps,
                                   InformerOptions{.ns = ns_,
                                                   .initial_backoff = std::chrono::milliseconds(50),
                                                   .on_lost = [this](const Error&) { ++lost_; },
                                                   .on_regained = [this] { ++regained_; }});
    informer_->AddHandler(
        [this](const std::string& type, const json& object) { recorder_.Record(type, object); });
  }

  void Put(const std::string& name, const std::string& value) {
    auto patched = client_->Patch(kConfigMaps, ns_, name, PatchType::kApply, ConfigMap(name, value),
                                  "berth-test");
    ASSERT_TRUE(patched) << patched.error().ToString();
  }

  KubeTestCluster* cluster_ = nullptr;
  std::string ns_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<FaultInjectingKubeApi> faulty_;
  Recorder recorder_;
  std::atomic<int> lost_{0}, regained_{0};
  std::unique_ptr<Informer> informer_;
};

TEST_F(InformerTest, ListsThenWatchesAndCaches) {
  Put("a", "1");
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(std::chrono::seconds(30)));
  Put("b", "1");
  Put("a", "2");
  ASSERT_TRUE(client_->Delete(kConfigMaps, ns_, "b", {}));
  EXPECT_EQ(recorder_.WaitFor(4),
            (std::vector<std::string>{"ADDED a=1", "ADDED b=1", "MODIFIED a=2", "DELETED b=1"}));
  auto cached = informer_->Get(ns_, "a");
  ASSERT_TRUE(cached);
  EXPECT_EQ((*cached)["data"]["v"], "2");
  EXPECT_FALSE(informer_->Get(ns_, "b"));
  auto stats = informer_->Stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.watches, 1u);
}

TEST_F(InformerTest, ATransformShapesTheCacheAndTheEvents) {
  Put("listed", "1");
  Informer informer(*client_, kConfigMaps, {.ns = ns_, .transform = [](json& object) {
                                              DropManagedFields(object);
                                              object["data"]["v"] =
                                                  object["data"]["v"].get<std::string>() + "!";
                                            }});
  std::vector<json> delivered;
  Mutex mutex;
  informer.AddHandler([&](const std::string&, const json& object) {
    MutexLock lock(mutex);
    delivered.push_back(object);
  });
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(30)));
  Put("watched", "2");
  for (int i = 0; i < 300 && !informer.Get(ns_, "watched"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (const char* name : {"listed", "watched"}) {
    auto cached = informer.Get(ns_, name);
    ASSERT_TRUE(cached) << name;
    EXPECT_FALSE((*cached)["metadata"].contains("managedFields")) << name;
    EXPECT_TRUE((*cached)["data"]["v"].get<std::string>().ends_with("!")) << name;
  }
  auto stored = client_->Get(kConfigMaps, ns_, "listed");
  ASSERT_TRUE(stored);
  EXPECT_TRUE((*stored)["metadata"].contains("managedFields")) << "the API's own copy has them";
  MutexLock lock(mutex);
  ASSERT_EQ(delivered.size(), 2u);
  for (const json& object : delivered) EXPECT_FALSE(object["metadata"].contains("managedFields"));
  informer.Stop();
}

TEST_F(InformerTest, ACutWatchResumesFromTheLastVersionWithoutLossOrRepeat) {
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(std::chrono::seconds(30)));
  Put("a", "1");
  ASSERT_EQ(recorder_.WaitFor(1).size(), 1u);
  faulty_->SetWatchesDown(true);
  faulty_->CutWatches();
  Put("a", "2");
  Put("c", "1");
  for (int i = 0; i < 3000 && lost_ == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // refused again, a few times
  EXPECT_EQ(lost_, 1) << "said once, however often the watch was refused";
  EXPECT_EQ(regained_, 0);
  faulty_->SetWatchesDown(false);
  EXPECT_EQ(recorder_.WaitFor(3),
            (std::vector<std::string>{"ADDED a=1", "MODIFIED a=2", "ADDED c=1"}));
  EXPECT_EQ(regained_, 1);
  Put("a", "3");  // the renewed watch is live
  EXPECT_EQ(recorder_.WaitFor(4).back(), "MODIFIED a=3");
  EXPECT_EQ(recorder_.WaitFor(4).size(), 4u);
  EXPECT_EQ(informer_->Stats().lists, 1u);
}

TEST_F(InformerTest, AnExpiredVersionRelistsAndDeliversOnlyTheDifferences) {
  Put("keep", "1");
  Put("change", "1");
  Put("drop", "1");
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(std::chrono::seconds(30)));
  ASSERT_EQ(recorder_.WaitFor(3).size(), 3u);
  faulty_->SetWatchesDown(true);
  faulty_->CutWatches();
  Put("change", "2");
  Put("change", "3");
  ASSERT_TRUE(client_->Delete(kConfigMaps, ns_, "drop", {}));
  Put("new", "1");
  ASSERT_TRUE(cluster_->CompactEtcd());
  faulty_->SetWatchesDown(false);
  auto lines = recorder_.WaitFor(6);
  std::vector<std::string> after_cut(lines.begin() + 3, lines.end());
  std::sort(after_cut.begin(), after_cut.end());
  EXPECT_EQ(after_cut,
            (std::vector<std::string>{"ADDED new=1", "DELETED drop=1", "MODIFIED change=3"}));
  EXPECT_EQ(informer_->Stats().lists, 2u);
  EXPECT_EQ(informer_->List().size(), 3u);
}

}  // namespace
}  // namespace berth::kube
