// A Terraform object reconciled end to end: the real apiserver with the CRD, a real Git server
// on loopback, the runner Pod played by the test node agent (runner serve over mutual TLS),
// the real tofu with its kubernetes backend. Planned, waiting for approval, applied once its
// plan id is written, outputs in a Secret, drift seen, corrected with approvePlan: auto.
#include "controller/reconciler.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "core/base64.h"
#include "core/clock.h"
#include "crypto/digest.h"
#include "git_ssh_server.h"
#include "kube_test_cluster.h"
#include "net/http_server.h"
#include "reconciler_fixture.h"
#include "sys/module_bundle.h"
#include "test_tools.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kNamespace[] = "tf-reconcile";
constexpr kube::ResourceKind kFluxGitRepositories{"source.toolkit.fluxcd.io/v1", "GitRepository",
                                                  "gitrepositories"};

class ReconcilerTest : public ReconcilerFixture {
 protected:
  static void SetUpTestSuite() { StartWorld(kNamespace); }
};

TEST_F(ReconcilerTest, PlansWaitsForApprovalAppliesWritesOutputsSeesDriftAndDestroys) {
  const fs::path world = WorldFile("approved");
  json object = Object("approved", world);
  object["spec"]["writeOutputsToSecret"] = {{"name", "approved-outputs"},
                                            {"outputs", {"id"}},
                                            {"labels", {{"team", "platform"}}},
                                            {"annotations", {{"owner", "infra@example.com"}}}};
  Create(object);
  json planned = Reconcile("approved");
  const json ready = ConditionOf(planned, "Ready");
  EXPECT_EQ(ready["status"], "False") << planned["status"].dump();
  EXPECT_EQ(ready["reason"], "PlanPending") << planned["status"].dump();
  const std::string plan_id = planned["status"]["plan"].value("id", "");
  ASSERT_TRUE(plan_id.starts_with("plan-")) << planned["status"].dump();
  EXPECT_EQ(planned["status"]["plan"]["add"], 1);
  // The plan file's digest, kept where runner Pods cannot write: the apply below loads the
  // plan only if its Secrets still hold exactly it.
  EXPECT_EQ(planned["status"]["plan"].value("sha256", "").size(), 64u) << planned["status"].dump();
  EXPECT_TRUE(
      planned["status"]["lastAttemptedRevision"].get<std::string>().starts_with("main@sha1:"));
  EXPECT_EQ(planned["status"]["binary"]["name"], "tofu");
  EXPECT_FALSE(fs::exists(world)) << "nothing is applied before approval";

  // Reconciling again without approval plans nothing new and applies nothing.
  json waiting = Reconcile("approved");
  EXPECT_EQ(waiting["status"]["plan"]["id"], plan_id);
  EXPECT_FALSE(fs::exists(world));

  Approve("approved", plan_id);
  json applied = Reconcile("approved");
  EXPECT_EQ(ConditionOf(applied, "Ready")["status"], "True") << applied["status"].dump();
  EXPECT_EQ(ConditionOf(applied, "Apply")["reason"], "Applied");
  EXPECT_EQ(sys::ReadFile(world).value(), "from git");
  EXPECT_EQ(applied["status"]["lastAppliedRevision"], planned["status"]["lastAttemptedRevision"]);
  EXPECT_FALSE(applied["status"].contains("plan")) << applied["status"].dump();
  EXPECT_EQ(applied["status"]["outputsSecretName"], "approved-outputs");
  auto outputs = shared->api->Get(kube::kSecrets, kNamespace, "approved-outputs");
  ASSERT_TRUE(outputs) << outputs.error().ToString();
  EXPECT_FALSE(Base64Decode((*outputs)["data"]["id"].get<std::string>()).value().empty());
  EXPECT_EQ((*outputs)["metadata"]["ownerReferences"][0]["name"], "approved");
  EXPECT_EQ((*outputs)["metadata"]["labels"]["team"], "platform");
  EXPECT_EQ((*outputs)["metadata"]["annotations"]["owner"], "infra@example.com");

  // State is in the kubernetes backend's Secret beside the object.
  auto state = shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-approved");
  EXPECT_TRUE(state) << state.error().ToString();

  json settled = Reconcile("approved");
  EXPECT_EQ(ConditionOf(settled, "Ready")["reason"], "NoChanges") << settled["status"].dump();
  EXPECT_EQ(ConditionOf(settled, "Apply")["reason"], "Applied") << "a later plan keeps it";

  // Without auto approval, drift waits for a person and says so.
  ASSERT_TRUE(sys::WriteFileAtomic(world, "changed by hand"));
  json drifted = Reconcile("approved");
  EXPECT_EQ(ConditionOf(drifted, "Ready")["reason"], "DriftDetected") << drifted["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "changed by hand");

  // destroy: true plans the destroy, which waits for its own approval like any plan.
  auto destroy = shared->api->Patch(kTerraforms, kNamespace, "approved", kube::PatchType::kMerge,
                                    {{"spec", {{"destroy", true}}}}, "test");
  ASSERT_TRUE(destroy) << destroy.error().ToString();
  json to_destroy = Reconcile("approved");
  EXPECT_EQ(ConditionOf(to_destroy, "Ready")["reason"], "PlanPending")
      << to_destroy["status"].dump();
  EXPECT_EQ(to_destroy["status"]["plan"]["destroy"], 1) << to_destroy["status"].dump();
  EXPECT_TRUE(fs::exists(world));
  Approve("approved", to_destroy["status"]["plan"]["id"]);
  json destroyed = Reconcile("approved");
  EXPECT_EQ(ConditionOf(destroyed, "Ready")["reason"], "Destroyed") << destroyed["status"].dump();
  EXPECT_FALSE(fs::exists(world));
  EXPECT_FALSE(shared->api->Get(kube::kSecrets, kNamespace, "approved-outputs"));
  EXPECT_FALSE(destroyed["status"].contains("outputsSecretName"));

  // Each step was an Event about the object, a failure or a drift a warning.
  auto events =
      shared->api->List(kube::kEvents, kNamespace, {.field_selector = "regarding.name=approved"});
  ASSERT_TRUE(events) << events.error().ToString();
  std::multiset<std::string> reasons;
  for (const json& event : events->items) {
    reasons.insert(event["reason"].get<std::string>() + "/" + event["type"].get<std::string>());
    EXPECT_EQ(event["regarding"]["kind"], "Terraform");
  }
  for (const char* expected : {"PlanPending/Normal", "Applied/Normal", "NoChanges/Normal",
                               "DriftDetected/Warning", "Destroyed/Normal"})
    EXPECT_TRUE(reasons.contains(expected)) << expected;
}

TEST_F(ReconcilerTest, AutoApprovalCorrectsDriftInAKeptPod) {
  const fs::path world = WorldFile("drifting");
  json object = Object("drifting", world, {{"alwaysCleanup", false}});
  object["spec"]["approvePlan"] = "auto";
  Create(object);
  json applied = Reconcile("drifting");
  ASSERT_EQ(ConditionOf(applied, "Ready")["status"], "True") << applied["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "from git");
  auto pod = shared->api->Get(kube::kPods, kNamespace, "drifting-tf-runner");
  ASSERT_TRUE(pod) << "alwaysCleanup: false keeps the runner Pod";
  const std::string uid = (*pod)["metadata"]["uid"];

  ASSERT_TRUE(sys::WriteFileAtomic(world, "changed by hand"));
  json corrected = Reconcile("drifting");
  EXPECT_EQ(ConditionOf(corrected, "Ready")["status"], "True") << corrected["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "from git") << "auto approval corrects the drift";
  auto again = shared->api->Get(kube::kPods, kNamespace, "drifting-tf-runner");
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)["metadata"]["uid"], uid) << "the kept Pod served the next run too";
}

// Runner certificates are renewed when a third of their life is left; a kept Pod holds the
// old one in its mounted Secret, so the next run gets a new Pod that mounts the new one.
TEST_F(ReconcilerTest, AKeptPodWhoseCertificateWasRenewedIsReplaced) {
  ManualClock clock;
  auto pki = RunnerPki::LoadOrCreate(*shared->api, clock, {.ns = "berth-system"});
  ASSERT_TRUE(pki) << pki.error().ToString();
  Reconciler rotating(*shared->api, **pki,
                      {.settings = shared->settings,
                       .state = shared->state->Endpoint(),
                       .runner_creation_timeout = std::chrono::seconds(60)});
  auto reconcile = [&] {
    auto done = rotating.Reconcile(Get("rotating"));
    EXPECT_TRUE(done) << done.error().ToString();
    json object = Get("rotating");
    EXPECT_EQ(ConditionOf(object, "Ready")["status"], "True") << object["status"].dump();
  };
  auto pod = [] {
    auto got = shared->api->Get(kube::kPods, kNamespace, "rotating-tf-runner");
    EXPECT_TRUE(got) << got.error().ToString();
    return got ? (*got)["metadata"] : json::object();
  };
  auto certificate = [] {
    auto secret = shared->api->Get(kube::kSecrets, kNamespace, "rotating-tf-runner-tls");
    EXPECT_TRUE(secret) << secret.error().ToString();
    return secret ? (*secret)["data"].value("tls.crt", "") : "";
  };
  json object = Object("rotating", WorldFile("rotating"), {{"alwaysCleanup", false}});
  object["spec"]["approvePlan"] = "auto";
  Create(object);
  reconcile();
  const json first = pod();
  const std::string first_certificate = certificate();
  reconcile();
  EXPECT_EQ(pod()["uid"], first["uid"]) << "a fresh certificate keeps the Pod";
  EXPECT_EQ(certificate(), first_certificate);

  clock.Advance(std::chrono::hours(17));  // of the runners' 24 h, less than a third is left
  reconcile();
  const json second = pod();
  EXPECT_NE(certificate(), first_certificate) << "renewed";
  EXPECT_NE(second["uid"], first["uid"]) << "the Pod that held the old certificate was replaced";
  EXPECT_NE(second["annotations"].value("berth.dev/tls-fingerprint", ""),
            first["annotations"].value("berth.dev/tls-fingerprint", ""));
}

TEST_F(ReconcilerTest, VarsFromConfigMapsAndSecretsInOrderThenSpecVars) {
  ASSERT_TRUE(shared->api->Create(kube::kConfigMaps, kNamespace,
                                  {{"apiVersion", "v1"},
                                   {"kind", "ConfigMap"},
                                   {"metadata", {{"name", "file-vars"}}},
                                   {"data", {{"content", "from a configmap"}, {"other", "x"}}}}));
  ASSERT_TRUE(shared->api->Create(
      kube::kSecrets, kNamespace,
      {{"apiVersion", "v1"},
       {"kind", "Secret"},
       {"metadata", {{"name", "file-secret"}}},
       {"data", {{"content", Base64Encode("from a secret")}, {"token", Base64Encode("t")}}}}));
  const fs::path world = WorldFile("vars-from");
  json object = Object("vars-from", world);
  object["spec"]["vars"] = {{{"name", "path"}, {"value", world.string()}}};
  object["spec"]["approvePlan"] = "auto";
  object["spec"]["varsFrom"] = {
      {{"kind", "ConfigMap"}, {"name", "file-vars"}, {"varsKeys", {"content"}}},
      {{"kind", "Secret"}, {"name", "file-secret"}, {"varsKeys", {"content"}}},
      {{"kind", "Secret"}, {"name", "not-there"}, {"optional", true}}};
  Create(object);
  json applied = Reconcile("vars-from");
  ASSERT_EQ(ConditionOf(applied, "Ready")["reason"], "Applied") << applied["status"].dump();
  EXPECT_EQ(sys::ReadFile(world).value(), "from a secret") << "the later source wins";

  // A source that must be there and is not stops the reconcile, naming it.
  auto patched = shared->api->Patch(
      kTerraforms, kNamespace, "vars-from", kube::PatchType::kMerge,
      {{"spec", {{"varsFrom", {{{"kind", "ConfigMap"}, {"name", "gone-vars"}}}}}}}, "test");
  ASSERT_TRUE(patched);
  EXPECT_FALSE(reconciler->Reconcile(Get("vars-from")));
  const json ready = ConditionOf(Get("vars-from"), "Ready");
  EXPECT_EQ(ready["reason"], "VarsUnavailable");
  EXPECT_NE(ready["message"].get<std::string>().find("ConfigMap gone-vars"), std::string::npos)
      << ready.dump();
}

TEST_F(ReconcilerTest, AFluxSourcesArtifactIsRunOnlyWhenItMatchesItsDigest) {
  ASSERT_TRUE(InstallCrd(*shared->api, testenv::TestTool("BERTH_TEST_FLUX_SOURCE_CRDS").value() /
                                           "gitrepositories.yaml"));
  // Playing source-controller: the artifact on an HTTP server, its place in the status.
  auto artifact = sys::PackModule(testenv::SourceDir() / "examples/file");
  ASSERT_TRUE(artifact);
  std::string served = *artifact;
  auto server = net::StartHttpServer({}, [&served](const net::ServerRequest& request) {
    if (request.target != "/gitrepository/tf-reconcile/infra/latest.tar.gz")
      return net::ServerResponse{.status = 404};
    return net::ServerResponse{.body = served};
  });
  ASSERT_TRUE(server);
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->Port()) +
                          "/gitrepository/tf-reconcile/infra/latest.tar.gz";
  auto publish = [&](const std::string& digest) {
    ASSERT_TRUE(
        shared->api->Patch(kFluxGitRepositories, kNamespace, "infra", kube::PatchType::kMerge,
                           {{"status",
                             {{"artifact",
                               {{"url", url},
                                {"digest", digest},
                                {"revision", "main@sha1:0123456789abcdef0123456789abcdef01234567"},
                                {"path", "gitrepository/tf-reconcile/infra/latest.tar.gz"},
                                {"lastUpdateTime", "2026-12-03T00:00:00Z"}}}}}},
                           "test", "status"));
  };
  ASSERT_TRUE(shared->api->Create(
      kFluxGitRepositories, kNamespace,
      {{"apiVersion", "source.toolkit.fluxcd.io/v1"},
       {"kind", "GitRepository"},
       {"metadata", {{"name", "infra"}}},
       {"spec", {{"url", "https://git.example.com/infra.git"}, {"interval", "5m"}}}}));

  const fs::path world = WorldFile("flux");
  json object = Object("flux", world);
  object["spec"].erase("git");
  object["spec"].erase("path");
  object["spec"]["sourceRef"] = {{"kind", "GitRepository"}, {"name", "infra"}};
  object["spec"]["approvePlan"] = "auto";
  Create(object);
  EXPECT_FALSE(reconciler->Reconcile(Get("flux"))) << "no artifact yet";
  EXPECT_EQ(ConditionOf(Get("flux"), "Ready")["reason"], "SourceUnavailable");

  // An artifact that is not the one the source advertises (changed on the way) runs nothing.
  publish("sha256:" + std::string(64, '0'));
  EXPECT_FALSE(reconciler->Reconcile(Get("flux")));
  const json refused = ConditionOf(Get("flux"), "Ready");
  EXPECT_EQ(refused["reason"], "SourceUnavailable");
  EXPECT_NE(refused["message"].get<std::string>().find("does not match its digest"),
            std::string::npos)
      << refused.dump();
  EXPECT_FALSE(fs::exists(world));

  publish("sha256:" + crypto::Sha256Hex(served));
  json applied = Reconcile("flux");
  EXPECT_EQ(ConditionOf(applied, "Ready")["reason"], "Applied") << applied["status"].dump();
  EXPECT_EQ(applied["status"]["lastAppliedRevision"],
            "main@sha1:0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(sys::ReadFile(world).value(), "from git");

  // Another namespace's source is another team's.
  json elsewhere = Object("flux-elsewhere", WorldFile("flux-elsewhere"));
  elsewhere["spec"].erase("git");
  elsewhere["spec"]["sourceRef"] = {
      {"kind", "GitRepository"}, {"name", "infra"}, {"namespace", "team-b"}};
  Create(elsewhere);
  EXPECT_FALSE(reconciler->Reconcile(Get("flux-elsewhere")));
  EXPECT_NE(ConditionOf(Get("flux-elsewhere"), "Ready")["message"].get<std::string>().find(
                "spec.sourceRef.namespace"),
            std::string::npos);
}

// source-controller's other two kinds carry the same artifact in their status (Flux v1 APIs,
// their real CRDs): each is fetched, checked and run as a GitRepository's is.
TEST_F(ReconcilerTest, AnOciRepositoryAndABucketArtifactAreRunAsAGitRepositorysIs) {
  const fs::path crds = testenv::TestTool("BERTH_TEST_FLUX_SOURCE_CRDS").value();
  auto artifact = sys::PackModule(testenv::SourceDir() / "examples/file");
  ASSERT_TRUE(artifact);
  const std::string& served = *artifact;
  auto server = net::StartHttpServer({}, [&served](const net::ServerRequest& request) {
    if (!request.target.ends_with("/latest.tar.gz")) return net::ServerResponse{.status = 404};
    return net::ServerResponse{.body = served};
  });
  ASSERT_TRUE(server);
  struct Source {
    kube::ResourceKind kind;
    std::string crd;
    json spec;
    std::string revision;
  };
  const std::vector<Source> sources = {
      {{"source.toolkit.fluxcd.io/v1", "OCIRepository", "ocirepositories"},
       "ocirepositories.yaml",
       {{"url", "oci://registry.example.com/infra"}, {"interval", "5m"}},
       "latest@sha256:" + std::string(64, 'a')},
      {{"source.toolkit.fluxcd.io/v1", "Bucket", "buckets"},
       "buckets.yaml",
       {{"bucketName", "infra"}, {"endpoint", "minio.example.com"}, {"interval", "5m"}},
       "sha256:" + std::string(64, 'b')}};
  for (const Source& source : sources) {
    SCOPED_TRACE(source.kind.kind);
    ASSERT_TRUE(InstallCrd(*shared->api, crds / source.crd));
    const std::string plural(source.kind.plural);
    const std::string name = "infra-" + plural;
    ASSERT_TRUE(shared->api->Create(source.kind, kNamespace,
                                    {{"apiVersion", source.kind.api_version},
                                     {"kind", source.kind.kind},
                                     {"metadata", {{"name", name}}},
                                     {"spec", source.spec}}));
    const std::string path = plural + "/" + kNamespace + "/" + name + "/latest.tar.gz";
    ASSERT_TRUE(shared->api->Patch(
        source.kind, kNamespace, name, kube::PatchType::kMerge,
        {{"status",
          {{"artifact",
            {{"url", "http://127.0.0.1:" + std::to_string((*server)->Port()) + "/" + path},
             {"digest", "sha256:" + crypto::Sha256Hex(served)},
             {"revision", source.revision},
             {"path", path},
             {"lastUpdateTime", "2026-12-03T00:00:00Z"}}}}}},
        "test", "status"));
    const std::string object_name = "from-" + plural;
    const fs::path world = WorldFile(object_name);
    json object = Object(object_name, world);
    object["spec"].erase("git");
    object["spec"].erase("path");
    object["spec"]["sourceRef"] = {{"kind", source.kind.kind}, {"name", name}};
    object["spec"]["approvePlan"] = "auto";
    Create(object);
    json applied = Reconcile(object_name);
    EXPECT_EQ(ConditionOf(applied, "Ready")["reason"], "Applied") << applied["status"].dump();
    EXPECT_EQ(applied["status"]["lastAppliedRevision"], source.revision);
    EXPECT_EQ(sys::ReadFile(world).value(), "from git");
  }
}

TEST_F(ReconcilerTest, AFailedPlanComesBackAfterRetryIntervalAndASuccessAfterInterval) {
  json failing = Object("failing", WorldFile("failing"));
  failing["spec"]["vars"] = json::array();  // the module's required `path` is missing
  failing["spec"]["retryInterval"] = "45s";
  failing["spec"]["interval"] = "10m";
  Create(failing);
  auto failed = reconciler->Reconcile(Get("failing"));
  ASSERT_TRUE(failed) << "the run failed, the reconcile did not";
  EXPECT_EQ(failed->requeue_after, std::chrono::seconds(45));
  EXPECT_EQ(ConditionOf(Get("failing"), "Ready")["status"], "False");

  json passing = Object("passing", WorldFile("passing"));
  passing["spec"]["interval"] = "10m";
  Create(passing);
  auto planned = reconciler->Reconcile(Get("passing"));
  ASSERT_TRUE(planned);
  EXPECT_EQ(planned->requeue_after, std::chrono::minutes(10));
}

TEST_F(ReconcilerTest, AnSshSourceIsFetchedWithTheKeysOfItsSecret) {
  auto ssh = testenv::GitSshServer::Start();
  ASSERT_TRUE(ssh) << ssh.error().ToString();
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "ssh-git"}}},
                 {"data",
                  {{"identity", Base64Encode((*ssh)->Identity())},
                   {"known_hosts", Base64Encode((*ssh)->KnownHosts())}}}};
  ASSERT_TRUE(shared->api->Create(kube::kSecrets, kNamespace, secret));
  json object = Object("over-ssh", WorldFile("over-ssh"));
  object["spec"]["git"] = {{"url", (*ssh)->Url(shared->dir->Path() / "srv/infra.git")},
                           {"ref", {{"branch", "main"}}},
                           {"secretRef", {{"name", "ssh-git"}}}};
  Create(object);
  json planned = Reconcile("over-ssh");
  EXPECT_EQ(ConditionOf(planned, "Ready")["reason"], "PlanPending") << planned["status"].dump();
  EXPECT_TRUE(planned["status"].value("lastAttemptedRevision", "").starts_with("main@sha1:"));
}

TEST_F(ReconcilerTest, DependsOnWaitsForItsDependencyToBeReadyAndACycleIsNamed) {
  json app = Object("app", WorldFile("app"));
  app["spec"]["dependsOn"] = {{{"name", "base"}}};
  Create(app);
  json waiting = Reconcile("app");
  EXPECT_EQ(ConditionOf(waiting, "Ready")["reason"], "DependencyNotReady");
  EXPECT_NE(ConditionOf(waiting, "Ready")["message"].get<std::string>().find(
                std::string(kNamespace) + "/base, which does not exist"),
            std::string::npos)
      << waiting["status"].dump();

  json base = Object("base", WorldFile("base"));
  base["spec"]["approvePlan"] = "auto";
  Create(base);
  EXPECT_EQ(ConditionOf(Reconcile("app"), "Ready")["reason"], "DependencyNotReady")
      << "base exists but has not applied";
  EXPECT_FALSE(fs::exists(WorldFile("app")));
  EXPECT_EQ(ConditionOf(Reconcile("base"), "Ready")["reason"], "Applied");
  json planned = Reconcile("app");
  EXPECT_EQ(ConditionOf(planned, "Ready")["reason"], "PlanPending") << planned["status"].dump();

  json ping = Object("ping", WorldFile("ping"));
  ping["spec"]["dependsOn"] = {{{"name", "pong"}}};
  json pong = Object("pong", WorldFile("pong"));
  pong["spec"]["dependsOn"] = {{{"name", "ping"}, {"namespace", kNamespace}}};
  Create(ping);
  Create(pong);
  const json cycle = ConditionOf(Reconcile("ping"), "Ready");
  EXPECT_EQ(cycle["reason"], "DependencyCycle") << cycle.dump();
}

TEST_F(ReconcilerTest, ARunnerPodThatNeverGetsReadyIsRunnerConnectionFailed) {
  json object = Object("no-image", WorldFile("no-image"), {{"image", "berth/absent:1"}});
  Create(object);
  Reconciler impatient(*shared->api, *shared->pki,
                       {.settings = shared->settings,
                        .state = shared->state->Endpoint(),
                        .runner_creation_timeout = std::chrono::seconds(2)});
  auto done = impatient.Reconcile(Get("no-image"));
  ASSERT_FALSE(done);
  const json ready = ConditionOf(Get("no-image"), "Ready");
  EXPECT_EQ(ready["reason"], "RunnerConnectionFailed") << ready.dump();
  EXPECT_NE(ready["message"].get<std::string>().find("not Ready within 2s"), std::string::npos)
      << ready.dump();
}

TEST_F(ReconcilerTest, AFullQuotaIsRunnerQuotaExhaustedAndTheNextReconcileGoesOn) {
  constexpr char kQuotaNamespace[] = "tf-quota";
  ASSERT_TRUE(testenv::KubeTestCluster::Shared().value()->CreateNamespace(kQuotaNamespace));
  json quota = {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "runners"}}},
                {"spec", {{"hard", {{"pods", "0"}}}}}};
  ASSERT_TRUE(shared->api->Create(kube::kResourceQuotas, kQuotaNamespace, quota));
  // No quota controller runs here: the status a quota controller would write, by hand.
  auto set_quota = [&](const std::string& pods) {
    ASSERT_TRUE(shared->api->Patch(
        kube::kResourceQuotas, kQuotaNamespace, "runners", kube::PatchType::kMerge,
        {{"spec", {{"hard", {{"pods", pods}}}}},
         {"status", {{"hard", {{"pods", pods}}}, {"used", {{"pods", "0"}}}}}},
        "test", "status"));
  };
  set_quota("0");
  ASSERT_TRUE(shared->api->Create(kTerraforms, kQuotaNamespace,
                                  shared->FileStack("quota", kQuotaNamespace, WorldFile("quota"))));
  auto get = [&] { return shared->api->Get(kTerraforms, kQuotaNamespace, "quota").value(); };
  EXPECT_FALSE(reconciler->Reconcile(get()));
  EXPECT_EQ(ConditionOf(get(), "Ready")["reason"], "RunnerQuotaExhausted")
      << get()["status"].dump();
  set_quota("5");
  ASSERT_TRUE(reconciler->Reconcile(get()));
  EXPECT_EQ(ConditionOf(get(), "Ready")["reason"], "PlanPending") << get()["status"].dump();
}

TEST_F(ReconcilerTest, FileMappingsTheCliConfigAndACustomBackendReachTheRun) {
  auto secret = [](const std::string& tfrc) {
    return json{{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", "run-files"}}},
                {"data",
                 {{"extra.tf", Base64Encode("output \"mapped\" { value = \"from a secret\" }\n")},
                  {"terraform.tfrc", Base64Encode(tfrc)}}}};
  };
  // The node agent's Pods are processes of this machine: the image's mirror by its own path.
  const std::string mirror = (shared->image / "mirror").string();
  ASSERT_TRUE(shared->api->Create(
      kube::kSecrets, kNamespace,
      secret("provider_installation {\n  filesystem_mirror { path = \"" + mirror + "\" }\n}\n")));
  const fs::path state = shared->dir->Path() / "placed.tfstate";
  json object = Object("placed", WorldFile("placed"));
  object["spec"]["approvePlan"] = "auto";
  object["spec"]["fileMappings"] = {{{"location", "workspace"},
                                     {"path", "extra.tf"},
                                     {"secretRef", {{"name", "run-files"}, {"key", "extra.tf"}}}}};
  object["spec"]["cliConfigSecretRef"] = {{"name", "run-files"}};
  object["spec"]["backendConfig"]["customConfiguration"] =
      "terraform {\n  backend \"local\" {\n    path = \"" + state.string() + "\"\n  }\n}\n";
  Create(object);
  json applied = Reconcile("placed");
  ASSERT_EQ(ConditionOf(applied, "Ready")["reason"], "Applied") << applied["status"].dump();
  auto outputs = shared->api->Get(kube::kSecrets, kNamespace, "placed-outputs");
  ASSERT_TRUE(outputs);
  EXPECT_EQ(Base64Decode((*outputs)["data"].value("mapped", "")).value(), "from a secret")
      << "the mapped file was part of the module";
  EXPECT_TRUE(fs::exists(state)) << "the custom backend kept the state";
  EXPECT_FALSE(shared->api->Get(kube::kSecrets, kNamespace, "tfstate-default-placed"));

  // The CLI configuration is the run's: one whose mirror is empty leaves no provider to install.
  ASSERT_TRUE(shared->api->Patch(
      kube::kSecrets, kNamespace, "run-files", kube::PatchType::kMerge,
      secret("provider_installation {\n  filesystem_mirror { path = \"/nowhere\" }\n}\n"), "test"));
  json failed = Reconcile("placed");
  EXPECT_EQ(ConditionOf(failed, "Plan")["status"], "False") << failed["status"].dump();

  json unmapped = Object("unmapped", WorldFile("unmapped"));
  unmapped["spec"]["fileMappings"] = {{{"location", "home"},
                                       {"path", ".config/creds.json"},
                                       {"secretRef", {{"name", "run-files"}, {"key", "absent"}}}}};
  Create(unmapped);
  EXPECT_FALSE(reconciler->Reconcile(Get("unmapped")));
  const json ready = ConditionOf(Get("unmapped"), "Ready");
  EXPECT_EQ(ready["reason"], "SecretUnavailable");
  EXPECT_NE(ready["message"].get<std::string>().find("spec.fileMappings[0].secretRef"),
            std::string::npos)
      << ready.dump();
  EXPECT_FALSE(shared->api->Get(kube::kPods, kNamespace, "unmapped-tf-runner"));
}

}  // namespace
}  // namespace berth::controller
