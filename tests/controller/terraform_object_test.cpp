// A Terraform object as berth-controller reads it, and the runner Pod it gets (seed 000).
#include "controller/terraform_object.h"

#include <gtest/gtest.h>

#include "controller/dependencies.h"
#include "controller/finalizer.h"

namespace berth::controller {
namespace {

using nlohmann::json;

json Object(json runner = json::object(), std::string name = "demo") {
  return {{"apiVersion", "berth.dev/v1alpha1"},
          {"kind", "Terraform"},
          {"metadata", {{"name", name}, {"namespace", "infra"}, {"uid", "u-1"}, {"generation", 3}}},
          {"spec", {{"git", {{"url", "https://git.example.com/infra.git"}}}, {"runner", runner}}}};
}

launch::KubernetesSettings Settings() {
  auto settings = launch::ControllerRunnerSettings({{"KUBERNETES_IMAGE", "berth/runner:1"}});
  EXPECT_TRUE(settings) << settings.error().ToString();
  return *settings;
}

launch::RunnerManifests Pod(const json& object, const std::string& revision = "abc123") {
  auto parsed = launch::TerraformObject::Parse(object);
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  auto pod = launch::BuildTerraformRunnerPod(Settings(), *parsed, revision);
  EXPECT_TRUE(pod) << pod.error().ToString();
  return *pod;
}

const json& Runner(const launch::RunnerManifests& m) { return m.workload["spec"]["containers"][0]; }

bool HasEnv(const json& container, const std::string& name) {
  for (const json& e : container["env"])
    if (e["name"] == name) return true;
  return false;
}

TEST(TerraformObject, ReadsItsIdentityAndItsRunner) {
  auto object = launch::TerraformObject::Parse(
      Object({{"serviceAccountName", "tf-runner"}, {"alwaysCleanup", false}, {"binary", "tofu"}}));
  ASSERT_TRUE(object) << object.error().ToString();
  EXPECT_EQ(object->name, "demo");
  EXPECT_EQ(object->ns, "infra");
  EXPECT_EQ(object->uid, "u-1");
  EXPECT_EQ(object->generation, 3);
  EXPECT_EQ(object->runner.service_account, "tf-runner");
  EXPECT_FALSE(object->runner.always_cleanup);
  EXPECT_EQ(object->runner.binary, "tofu");
  EXPECT_EQ(object->runner.ns, "infra") << "the Pod lives beside its object";
}

TEST(TerraformObject, NamesEveryBrokenField) {
  json broken = Object();
  broken["apiVersion"] = "berth.dev/v1";
  broken["metadata"]["namespace"] = 7;
  broken["metadata"].erase("name");
  auto parsed = launch::TerraformObject::Parse(broken);
  ASSERT_FALSE(parsed);
  std::string paths;
  for (const auto& field : parsed.error().fields) paths += field.path + " ";
  EXPECT_EQ(paths, "apiVersion metadata.namespace metadata.name ");

  auto runner = launch::TerraformObject::Parse(Object({{"alwaysCleanup", "no"}, {"gpu", true}}));
  ASSERT_FALSE(runner);
  EXPECT_NE(runner.error().ToString().find("$.spec.runner.gpu"), std::string::npos)
      << runner.error().ToString();
  EXPECT_NE(runner.error().ToString().find("$.spec.runner.alwaysCleanup"), std::string::npos)
      << runner.error().ToString();
}

TEST(RunnerPod, ServesOnItsOwnAddressWithTheTlsSecretAndNoToken) {
  auto m = Pod(Object({{"serviceAccountName", "tf-runner"}}));
  EXPECT_EQ(m.name, "demo-tf-runner");
  EXPECT_EQ(m.ns, "infra");
  EXPECT_TRUE(m.secret.is_null()) << "the controller writes the TLS Secret itself";
  const json& runner = Runner(m);
  EXPECT_EQ(runner["args"],
            json({"serve", "--listen=$(POD_IP):30000", "--tls-cert=/berth/tls/tls.crt",
                  "--tls-key=/berth/tls/tls.key", "--client-ca=/berth/tls/ca.crt"}));
  EXPECT_EQ(runner["ports"][0]["containerPort"], 30000);
  EXPECT_EQ(runner["readinessProbe"]["tcpSocket"]["port"], 30000);
  EXPECT_TRUE(HasEnv(runner, "POD_IP"));
  EXPECT_TRUE(HasEnv(runner, "POD_NAME"));
  EXPECT_FALSE(HasEnv(runner, "BERTH_TOKEN_FILE"));
  const json& volumes = m.workload["spec"]["volumes"];
  EXPECT_EQ(volumes.back()["name"], "berth-tls");
  EXPECT_EQ(volumes.back()["secret"]["secretName"], "demo-tf-runner-tls");
  EXPECT_EQ(m.workload["spec"]["serviceAccountName"], "tf-runner");
  EXPECT_EQ(runner["securityContext"]["runAsUser"], 65532);

  const json& labels = m.workload["metadata"]["labels"];
  EXPECT_EQ(labels["app.kubernetes.io/name"], "tf-runner");
  EXPECT_EQ(labels["app.kubernetes.io/instance"], "tf-runner-abc123");
  EXPECT_EQ(labels["berth.dev/terraform"], "infra");
  EXPECT_EQ(labels["berth.dev/launcher"], "berth-controller");
  EXPECT_FALSE(labels.contains("berth.dev/run"));
}

TEST(RunnerPod, OnlyAKeptPodCachesProviders) {
  EXPECT_FALSE(HasEnv(Runner(Pod(Object())), "TF_PLUGIN_CACHE_DIR"));
  const json kept = Runner(Pod(Object({{"alwaysCleanup", false}})));
  ASSERT_TRUE(HasEnv(kept, "TF_PLUGIN_CACHE_DIR"));
  for (const json& e : kept["env"]) {
    if (e["name"] == "TF_PLUGIN_CACHE_DIR") {
      EXPECT_EQ(e["value"], "/tmp/plugin-cache");
    }
  }
}

TEST(RunnerPod, ItsSpecHashFollowsSpecRunnerOnly) {
  // A kept Pod is replaced when spec.runner changed (seed 000): the hash says so.
  EXPECT_EQ(Pod(Object()).spec_hash, Pod(Object(), "other-revision").spec_hash);
  EXPECT_NE(Pod(Object()).spec_hash, Pod(Object({{"image", "corp/runner:2"}})).spec_hash);
}

TEST(RunnerPod, ANameTooLongForItsPodIsRefusedNamingIt) {
  auto parsed = launch::TerraformObject::Parse(Object(json::object(), std::string(54, 'a')));
  ASSERT_TRUE(parsed);
  auto pod = launch::BuildTerraformRunnerPod(Settings(), *parsed, "1");
  ASSERT_FALSE(pod);
  EXPECT_EQ(pod.error().fields.at(0).path, "metadata.name");
}

TEST(ControllerRunnerSettings, RefuseANamespaceSinceEachObjectHasItsOwn) {
  auto settings = launch::ControllerRunnerSettings(
      {{"KUBERNETES_IMAGE", "i"}, {"KUBERNETES_NAMESPACE", "runners"}});
  ASSERT_FALSE(settings);
  EXPECT_EQ(settings.error().fields.at(0).path, "KUBERNETES_NAMESPACE");
  auto missing = launch::ControllerRunnerSettings({});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().fields.at(0).path, "KUBERNETES_IMAGE");
}

// Seed 000: the default runner image comes from RUNNER_POD_IMAGE.
TEST(ControllerRunnerSettings, TakeTheRunnerImageFromRunnerPodImage) {
  auto settings =
      launch::ControllerRunnerSettings({{"RUNNER_POD_IMAGE", "registry.example.com/runner:2"}});
  ASSERT_TRUE(settings) << settings.error().ToString();
  EXPECT_EQ(settings->image, "registry.example.com/runner:2");
  auto same =
      launch::ControllerRunnerSettings({{"RUNNER_POD_IMAGE", "r:2"}, {"KUBERNETES_IMAGE", "r:2"}});
  EXPECT_TRUE(same);
  auto differ =
      launch::ControllerRunnerSettings({{"RUNNER_POD_IMAGE", "r:2"}, {"KUBERNETES_IMAGE", "r:1"}});
  ASSERT_FALSE(differ);
  EXPECT_EQ(differ.error().fields.at(0).path, "RUNNER_POD_IMAGE");
}

TEST(SpecDuration, ReadsGoDurationsAtLeastASecondAndFallsBackOtherwise) {
  const json spec = {{"interval", "1h30m"}, {"retryInterval", "10ms"}, {"bad", "soon"}};
  EXPECT_EQ(SpecDuration(spec, "interval", std::chrono::seconds(7)), std::chrono::minutes(90));
  EXPECT_EQ(SpecDuration(spec, "retryInterval", std::chrono::seconds(7)), std::chrono::seconds(1));
  EXPECT_EQ(SpecDuration(spec, "bad", std::chrono::seconds(7)), std::chrono::seconds(7));
  EXPECT_EQ(SpecDuration(spec, "absent", std::chrono::seconds(7)), std::chrono::seconds(7));
}

TEST(Dependencies, AreKeyedInTheObjectsNamespaceUnlessTheyNameOne) {
  json object = Object();
  object["spec"]["dependsOn"] = {{{"name", "network"}}, {{"name", "dns"}, {"namespace", "shared"}}};
  EXPECT_EQ(DependencyKeys(object), (std::vector<std::string>{"infra/network", "shared/dns"}));
  EXPECT_TRUE(DependencyKeys(Object()).empty());
}

TEST(Dependencies, AreReadyOnlyWhenReadyAtTheirCurrentGeneration) {
  json object = Object();  // generation 3
  EXPECT_EQ(ReadySignal(object), "") << "never reconciled";
  object["status"] = {
      {"lastAppliedRevision", "main@sha1:ab"},
      {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"observedGeneration", 3}}}}};
  EXPECT_EQ(ReadySignal(object), "main@sha1:ab@3");
  object["status"]["conditions"][0]["observedGeneration"] = 2;
  EXPECT_EQ(ReadySignal(object), "") << "its spec changed since it was Ready";
  object["status"]["conditions"][0]["observedGeneration"] = 3;
  object["status"]["conditions"][0]["status"] = "False";
  EXPECT_EQ(ReadySignal(object), "");
}

TEST(DestroyFinalizer, IsSeenAmongOthers) {
  json object = Object();
  EXPECT_FALSE(HasDestroyFinalizer(object));
  object["metadata"]["finalizers"] = {"example.com/other", "berth.dev/destroy"};
  EXPECT_TRUE(HasDestroyFinalizer(object));
}

}  // namespace
}  // namespace berth::controller
