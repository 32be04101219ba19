// Deleting a Terraform object (docs/controller.md, "Deleting an object"), end to end on the
// real apiserver with the real tofu in runner Pods: deletionPolicy: destroy destroys first,
// through approvePlan like any plan; retain lets go at once; and nothing leaves an object stuck
// Terminating: a missing source, a runner that cannot start, a namespace being deleted.
#include <gtest/gtest.h>

#include <set>

#include "controller/finalizer.h"
#include "kube_test_cluster.h"
#include "reconciler_fixture.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-delete";

class DeletionTest : public ReconcilerFixture {
 protected:
  static void SetUpTestSuite() { StartWorld(kNamespace); }

  // A stack applied at once, destroyed when its object is deleted.
  static json Applied(const std::string& name, json runner = json::object()) {
    json object = Object(name, WorldFile(name), std::move(runner));
    object["spec"]["deletionPolicy"] = "destroy";
    object["spec"]["approvePlan"] = "auto";
    Create(object);
    json applied = Reconcile(name);
    EXPECT_EQ(ConditionOf(applied, "Ready")["reason"], "Applied") << applied["status"].dump();
    EXPECT_TRUE(HasDestroyFinalizer(applied)) << applied["metadata"].dump();
    return applied;
  }

  static void DeleteObject(const std::string& ns, const std::string& name) {
    auto deleted = shared->api->Delete(kTerraforms, ns, name, {});
    ASSERT_TRUE(deleted) << deleted.error().ToString();
  }

  static bool Gone(const std::string& ns, const std::string& name) {
    auto got = shared->api->Get(kTerraforms, ns, name);
    return !got && got.error().kind == ErrorKind::kNotFound;
  }

  static std::set<std::string> EventReasons(const std::string& name) {
    auto events =
        shared->api->List(kube::kEvents, kNamespace, {.field_selector = "regarding.name=" + name});
    EXPECT_TRUE(events) << events.error().ToString();
    std::set<std::string> reasons;
    if (!events) return reasons;
    for (const json& event : events->items)
      reasons.insert(event["reason"].get<std::string>() + "/" + event["type"].get<std::string>());
    return reasons;
  }

  // A reconciler that gives up on a failing destroy at once.
  static Reconciler Hasty(std::chrono::seconds runner_creation_timeout) {
    return Reconciler(*shared->api, *shared->pki,
                      {.settings = shared->settings,
                       .state = shared->state->Endpoint(),
                       .runner_creation_timeout = runner_creation_timeout,
                       .destroy_timeout = std::chrono::seconds(0)});
  }
};

TEST_F(DeletionTest, ADestroyPolicyDestroysOnceTheDestroyPlanIsApprovedThenLetsGo) {
  const fs::path world = WorldFile("doomed");
  Applied("doomed");
  ASSERT_TRUE(fs::exists(world));
  PatchSpec("doomed", {{"approvePlan", nullptr}});  // from now on a person approves
  DeleteObject(kNamespace, "doomed");

  json waiting = Reconcile("doomed");
  const json plan = waiting["status"]["plan"];
  EXPECT_EQ(plan["operation"], "destroy") << plan.dump();
  EXPECT_EQ(plan["destroy"], 1) << plan.dump();
  EXPECT_EQ(ConditionOf(waiting, "Ready")["reason"], "PlanPending");
  EXPECT_TRUE(fs::exists(world)) << "nothing is destroyed before its plan is approved";
  EXPECT_EQ(Reconcile("doomed")["status"]["plan"]["id"], plan["id"]) << "it waits, not re-plans";

  Approve("doomed", plan["id"]);
  auto done = reconciler->Reconcile(Get("doomed"));
  ASSERT_TRUE(done) << done.error().ToString();
  EXPECT_FALSE(fs::exists(world));
  EXPECT_TRUE(Gone(kNamespace, "doomed"));
  EXPECT_FALSE(shared->api->Get(kube::kSecrets, kNamespace, "doomed-outputs"));
  EXPECT_TRUE(EventReasons("doomed").contains("Destroyed/Normal"));
}

TEST_F(DeletionTest, TheFinalizerFollowsThePolicyAndRetainKeepsTheInfrastructure) {
  const fs::path world = WorldFile("kept");
  Applied("kept");
  PatchSpec("kept", {{"deletionPolicy", "retain"}});
  json retained = Reconcile("kept");
  EXPECT_FALSE(HasDestroyFinalizer(retained)) << retained["metadata"].dump();
  DeleteObject(kNamespace, "kept");
  EXPECT_TRUE(Gone(kNamespace, "kept")) << "no finalizer: the apiserver removes it at once";
  EXPECT_TRUE(fs::exists(world));
  EXPECT_TRUE(shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-kept"))
      << "the state stays with the infrastructure";
}

TEST_F(DeletionTest, AMissingSourceHoldsADeletionOnlyUntilItsDeadlineAndTheStateIsKept) {
  const fs::path world = WorldFile("orphaned");
  Applied("orphaned");
  PatchSpec("orphaned", {{"git", {{"ref", {{"branch", "deleted-branch"}}}}}});
  DeleteObject(kNamespace, "orphaned");

  auto waiting = reconciler->Reconcile(Get("orphaned"));
  ASSERT_TRUE(waiting) << waiting.error().ToString();
  EXPECT_GT(waiting->requeue_after.count(), 0) << "a failed destroy is tried again";
  EXPECT_LE(waiting->requeue_after.count(), 60);
  EXPECT_EQ(ConditionOf(Get("orphaned"), "Ready")["reason"], "SourceUnavailable");

  Reconciler hasty = Hasty(std::chrono::seconds(60));
  ASSERT_TRUE(hasty.Reconcile(Get("orphaned")));
  EXPECT_TRUE(Gone(kNamespace, "orphaned"));
  EXPECT_TRUE(fs::exists(world)) << "abandoned, not destroyed";
  EXPECT_TRUE(shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-orphaned"));
  EXPECT_TRUE(EventReasons("orphaned").contains("DestroyAbandoned/Warning"));
}

TEST_F(DeletionTest, ARunnerThatCannotStartDoesNotHoldADeletion) {
  json object = Object("unstartable", WorldFile("unstartable"), {{"image", "berth/absent:1"}});
  object["spec"]["deletionPolicy"] = "destroy";
  Create(object);
  Reconciler impatient(*shared->api, *shared->pki,
                       {.settings = shared->settings,
                        .state = shared->state->Endpoint(),
                        .runner_creation_timeout = std::chrono::seconds(2)});
  EXPECT_FALSE(impatient.Reconcile(Get("unstartable")));
  ASSERT_TRUE(HasDestroyFinalizer(Get("unstartable")));
  DeleteObject(kNamespace, "unstartable");

  ASSERT_TRUE(impatient.Reconcile(Get("unstartable")));
  EXPECT_EQ(ConditionOf(Get("unstartable"), "Ready")["reason"], "RunnerConnectionFailed");
  // Its owner lets it go without waiting for the deadline.
  PatchSpec("unstartable", {{"deletionPolicy", "retain"}});
  ASSERT_TRUE(impatient.Reconcile(Get("unstartable")));
  EXPECT_TRUE(Gone(kNamespace, "unstartable"));
  EXPECT_TRUE(EventReasons("unstartable").contains("Retained/Normal"));

  json hopeless = Object("hopeless", WorldFile("hopeless"), {{"image", "berth/absent:1"}});
  hopeless["spec"]["deletionPolicy"] = "destroy";
  Create(hopeless);
  EXPECT_FALSE(impatient.Reconcile(Get("hopeless")));
  DeleteObject(kNamespace, "hopeless");
  Reconciler hasty = Hasty(std::chrono::seconds(2));
  ASSERT_TRUE(hasty.Reconcile(Get("hopeless")));
  EXPECT_TRUE(Gone(kNamespace, "hopeless"));
}

TEST_F(DeletionTest, ANamespaceBeingDeletedDoesNotHoldItsObjects) {
  constexpr char kDoomedNamespace[] = "tf-delete-namespace";
  ASSERT_TRUE(testenv::KubeTestCluster::Shared().value()->CreateNamespace(kDoomedNamespace));
  json object = shared->FileStack("tenant", kDoomedNamespace, WorldFile("tenant"));
  object["spec"]["deletionPolicy"] = "destroy";
  object["spec"]["approvePlan"] = "auto";
  ASSERT_TRUE(shared->api->Create(kTerraforms, kDoomedNamespace, object));
  auto get = [&] { return shared->api->Get(kTerraforms, kDoomedNamespace, "tenant"); };
  ASSERT_TRUE(reconciler->Reconcile(get().value()));
  ASSERT_TRUE(fs::exists(WorldFile("tenant")));

  // The namespace stays Terminating while anything in it has a finalizer.
  ASSERT_TRUE(shared->api->Delete(kube::kNamespaces, "", kDoomedNamespace, {}));
  DeleteObject(kDoomedNamespace, "tenant");
  auto terminating = get();
  ASSERT_TRUE(terminating) << "held by its finalizer";
  ASSERT_TRUE(reconciler->Reconcile(*terminating));
  EXPECT_TRUE(Gone(kDoomedNamespace, "tenant"));
  EXPECT_TRUE(fs::exists(WorldFile("tenant"))) << "no runner can start there: kept, not destroyed";
}

}  // namespace
}  // namespace berth::controller
