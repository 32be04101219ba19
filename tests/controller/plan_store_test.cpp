// Plans kept as Secrets on the real test apiserver: a 10 MiB plan goes into chunks the API
// accepts and comes back whole; a new plan replaces the old one and leaves none of its chunks;
// a chunk changed behind the controller's back, or a hostile chunk count, is refused on load.
#include "controller/plan_store.h"

#include <gtest/gtest.h>

#include <random>

#include "core/base64.h"
#include "crypto/digest.h"
#include "kube_test_cluster.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr char kNamespace[] = "tf-plans";

class PlanStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto admin = testenv::KubeTestCluster::SharedAdminWith({kNamespace});
    ASSERT_TRUE(admin) << admin.error().ToString();
    api = admin->release();
  }
  static void TearDownTestSuite() { delete api; }

  static launch::TerraformObject Object(const std::string& name) {
    launch::TerraformObject object;
    object.name = name;
    object.ns = kNamespace;
    object.uid = "6f1d2c3b-2222-4c6e-9e8e-" + std::string(12 - name.size() % 12, '0') +
                 std::string(name.size() % 12, '1');
    return object;
  }

  // Bytes that do not compress: a plan's size is what the API sees.
  static std::string RandomPlan(size_t size) {
    std::mt19937_64 random(size);
    std::string plan(size, '\0');
    for (char& c : plan) c = static_cast<char>(random());
    return plan;
  }

  static std::vector<std::string> ChunksOf(const std::string& name) {
    auto list =
        api->List(kube::kSecrets, kNamespace, {.label_selector = "berth.dev/terraform=" + name});
    EXPECT_TRUE(list) << list.error().ToString();
    std::vector<std::string> names;
    if (list)
      for (const json& item : list->items) names.push_back(item["metadata"]["name"]);
    std::sort(names.begin(), names.end());
    return names;
  }

  static inline kube::KubeApi* api = nullptr;
};

TEST_F(PlanStoreTest, ATenMebibytePlanComesBackWholeAndASmallerOneLeavesNoChunkBehind) {
  const launch::TerraformObject object = Object("big");
  const std::string big = RandomPlan(size_t{10} << 20);
  ASSERT_TRUE(SavePlan(*api, object, "plan-big", big, "test"));
  EXPECT_EQ(ChunksOf("big").size(), (big.size() + kPlanChunkBytes - 1) / kPlanChunkBytes);
  auto loaded = LoadPlan(*api, object, "plan-big", crypto::Sha256Hex(big));
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_TRUE(*loaded == big) << "10 MiB plan changed on its way: " << loaded->size() << " bytes";

  const std::string small = RandomPlan(1000);
  ASSERT_TRUE(SavePlan(*api, object, "plan-small", small, "test"));
  EXPECT_EQ(ChunksOf("big"), std::vector<std::string>{"tfplan-big-0"});
  auto replaced = LoadPlan(*api, object, "plan-small", crypto::Sha256Hex(small));
  ASSERT_TRUE(replaced) << replaced.error().ToString();
  EXPECT_EQ(*replaced, small);
  auto old = LoadPlan(*api, object, "plan-big", crypto::Sha256Hex(big));
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().kind, ErrorKind::kNotFound) << old.error().ToString();
}

TEST_F(PlanStoreTest, AChunkChangedBehindItsBackIsRefused) {
  const launch::TerraformObject object = Object("tampered");
  const std::string plan = RandomPlan(kPlanChunkBytes + 10);
  ASSERT_TRUE(SavePlan(*api, object, "plan-t", plan, "test"));
  ASSERT_TRUE(api->Patch(kube::kSecrets, kNamespace, "tfplan-tampered-1", kube::PatchType::kMerge,
                         {{"data", {{"tfplan", Base64Encode("other bytes")}}}}, "intruder"));
  auto loaded = LoadPlan(*api, object, "plan-t", crypto::Sha256Hex(plan));
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("does not match its digest"), std::string::npos)
      << loaded.error().ToString();
}

TEST_F(PlanStoreTest, AHostileChunkCountIsRefusedBeforeAnyMoreIsRead) {
  const launch::TerraformObject object = Object("hostile");
  const std::string plan = RandomPlan(100);
  ASSERT_TRUE(SavePlan(*api, object, "plan-h", plan, "test"));
  for (const std::string count : {"0", "1000000", "-1", "many"}) {
    ASSERT_TRUE(api->Patch(kube::kSecrets, kNamespace, "tfplan-hostile-0", kube::PatchType::kMerge,
                           {{"metadata", {{"annotations", {{"berth.dev/plan-chunks", count}}}}}},
                           "intruder"));
    auto loaded = LoadPlan(*api, object, "plan-h", crypto::Sha256Hex(plan));
    ASSERT_FALSE(loaded) << count;
    EXPECT_NE(loaded.error().message.find("bad chunk count"), std::string::npos)
        << count << ": " << loaded.error().ToString();
  }
}

// A runner Pod's service account may write Secrets: it can rewrite a plan's chunks and the
// digest beside them alike. The digest the controller kept in the object's status, which no
// runner writes, still tells: the rewritten plan is refused, never applied.
TEST_F(PlanStoreTest, APlanRewrittenWithItsDigestIsRefusedByTheDigestTheControllerKept) {
  const launch::TerraformObject object = Object("rewritten");
  const std::string made = RandomPlan(100);
  ASSERT_TRUE(SavePlan(*api, object, "plan-r", made, "test"));
  const std::string other = RandomPlan(101);
  ASSERT_TRUE(api->Patch(
      kube::kSecrets, kNamespace, "tfplan-rewritten-0", kube::PatchType::kMerge,
      {{"metadata", {{"annotations", {{"berth.dev/plan-sha256", crypto::Sha256Hex(other)}}}}},
       {"data", {{"tfplan", Base64Encode(other)}}}},
      "intruder"));
  auto loaded = LoadPlan(*api, object, "plan-r", crypto::Sha256Hex(made));
  ASSERT_FALSE(loaded) << "a rewritten plan was loaded";
  EXPECT_NE(loaded.error().message.find("is not the plan that was made"), std::string::npos)
      << loaded.error().ToString();
  auto undigested = LoadPlan(*api, object, "plan-r", "");
  ASSERT_FALSE(undigested);
  EXPECT_EQ(undigested.error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace berth::controller
