// deploy/helm/berth installed for real on the test cluster's real node (tests/env/real_node.h):
// berthd starts from scripts/images' berthd image, `berth deploy` against it applies a module in
// a runner Pod from the runner image (an approved apply in its plan's kept Pod), an upgrade rolls
// berthd and keeps what it was doing, and an uninstall leaves nothing behind but the data's
// claim.
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/body.h"
#include "core/base64.h"
#include "kube/kube_api.h"
#include "kube_test_cluster.h"
#include "oci_layout.h"
#include "real_node.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kNamespace = "berth";
constexpr int kNodePort = 30080;
const std::string kBerthUrl = std::string("http://") + testenv::RealNode::kIp + ":30080";

using testenv::ImagesDir;

std::string ImageTag(const std::string& name) {
  auto manifest = testenv::ReadLayoutManifest(ImagesDir() / name);
  EXPECT_TRUE(manifest) << manifest.error().ToString();
  return manifest ? manifest->tag : "";
}

// What the suite sets up once: the node, the cluster's admin and the data's volume.
struct Suite {
  testenv::RealNode* node = nullptr;
  testenv::KubeTestCluster* cluster = nullptr;
  std::unique_ptr<kube::KubeClient> admin;
  std::optional<sys::TempDir> volume;
};
Suite& TheSuite() {
  static Suite suite;
  return suite;
}

class HelmInstall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto node = testenv::RealNode::Shared();
    ASSERT_TRUE(node) << node.error().ToString();
    TheSuite().node = *node;
    auto cluster = testenv::KubeTestCluster::Shared();
    ASSERT_TRUE(cluster);
    TheSuite().cluster = *cluster;
    auto admin = TheSuite().cluster->AdminClient();
    ASSERT_TRUE(admin) << admin.error().ToString();
    TheSuite().admin = std::move(*admin);
    for (const char* image : {"runner", "berthd"}) {
      auto pushed = TheSuite().node->Push(ImagesDir() / image, ImageTag(image),
                                          std::string("berth/") + image, ImageTag(image));
      ASSERT_TRUE(pushed) << pushed.error().ToString();
    }
    ASSERT_TRUE(TheSuite().node->PrepareNamespace(*TheSuite().admin, kNamespace));
    // What a cluster's storage does for the claim: a volume on the node, owned by berthd's user.
    auto volume = sys::TempDir::Create("berth-pv");
    ASSERT_TRUE(volume);
    TheSuite().volume.emplace(std::move(*volume));
    ASSERT_EQ(chown(TheSuite().volume->Path().c_str(), 65532, 65532), 0);
    json pv = {
        {"apiVersion", "v1"},
        {"kind", "PersistentVolume"},
        {"metadata", {{"name", "berth-data"}}},
        {"spec",
         {{"capacity", {{"storage", "1Gi"}}},
          {"accessModes", {"ReadWriteOnce"}},
          {"persistentVolumeReclaimPolicy", "Retain"},
          {"hostPath", {{"path", TheSuite().volume->Path().string()}, {"type", "Directory"}}}}}};
    ASSERT_TRUE(
        TheSuite().admin->Create({"v1", "PersistentVolume", "persistentvolumes", false}, "", pv));
  }

  static sys::Completed Helm(std::vector<std::string> args) {
    auto helm = testenv::TestTool("BERTH_TEST_HELM");
    EXPECT_TRUE(helm);
    args.insert(args.begin(), helm->string());
    args.push_back("--kubeconfig=" + TheSuite().cluster->AdminKubeconfig().string());
    auto done = sys::RunToCompletion({.argv = std::move(args)});
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{.exit_code = -1};
  }

  static std::vector<std::string> InstallValues() {
    const std::string& registry = TheSuite().node->Registry();
    return {"--namespace", kNamespace,
            "--set",       "image.repository=" + registry + "/berth/berthd",
            "--set",       "image.tag=" + ImageTag("berthd"),
            "--set",       "ephemeralRunner.image.repository=" + registry + "/berth/runner",
            "--set",       "ephemeralRunner.image.tag=" + ImageTag("runner"),
            "--set",       "service.type=NodePort",
            "--set",       "service.nodePort=" + std::to_string(kNodePort),
            "--set",       "advertiseUrl=" + kBerthUrl,
            "--wait",      "--timeout",
            "180s"};
  }

  static std::string AdminToken() {
    auto secret = TheSuite().admin->Get(kube::kSecrets, kNamespace, "berth-admin-token");
    EXPECT_TRUE(secret);
    auto token = Base64Decode((*secret)["data"]["token"].get<std::string>());
    return token ? *token : "";
  }

  // The berth CLI against the installed berthd.
  static sys::Completed Berth(std::vector<std::string> args) {
    args.insert(args.begin(), BERTH_CLI_BIN);
    auto done =
        sys::RunToCompletion({.argv = std::move(args),
                              .env = std::vector<std::string>{"BERTH_API_URL=" + kBerthUrl,
                                                              "BERTH_TOKEN=" + AdminToken(),
                                                              "HOME=/tmp", "PATH=/usr/bin:/bin"}});
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{.exit_code = -1};
  }

  // deploy/kubernetes/agent-rbac.yaml and agent.yaml applied as a user would, with the values
  // their comments say to set: berth-agent's two replicas in namespace berth-agent serve
  // kubernetes-agent runner cluster-a, which runs environment web/edge.
  static void ApplyAgentManifests(const fs::path& key_file, const std::string& public_key_pem) {
    const std::string ns = "berth-agent";
    const std::string& registry = TheSuite().node->Registry();
    ASSERT_TRUE(TheSuite().node->PrepareNamespace(*TheSuite().admin, ns));
    auto key = sys::ReadFile(key_file);
    ASSERT_TRUE(key);
    json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "berth-agent-key"}}},
                   {"data", {{"agent.key", Base64Encode(*key)}}}};
    ASSERT_TRUE(TheSuite().admin->Create(kube::kSecrets, ns, secret));
    for (const char* file : {"agent-rbac.yaml", "agent.yaml"}) {
      auto text = sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes" / file);
      ASSERT_TRUE(text);
      for (size_t begin = 0; begin < text->size();) {
        size_t end = text->find("\n---\n", begin);
        if (end == std::string::npos) end = text->size();
        auto doc = cli::YamlToJson(text->substr(begin, end - begin));
        begin = end + 5;
        ASSERT_TRUE(doc) << file << ": " << doc.error().ToString();
        std::string kind = (*doc)["kind"];
        if (kind == "Deployment") {
          json& container = (*doc)["spec"]["template"]["spec"]["containers"][0];
          container["image"] = registry + "/berth/berthd:" + ImageTag("berthd");
          for (json& var : container["env"]) {
            if (var["name"] == "BERTH_URL") var["value"] = kBerthUrl;
            if (var["name"] == "KUBERNETES_IMAGE")
              var["value"] = registry + "/berth/runner:" + ImageTag("runner");
          }
        }
        const std::map<std::string, kube::ResourceKind> kinds = {
            {"ServiceAccount", kube::kServiceAccounts},
            {"Role", kube::kRoles},
            {"RoleBinding", kube::kRoleBindings},
            {"Deployment", {"apps/v1", "Deployment", "deployments"}}};
        ASSERT_TRUE(kinds.contains(kind)) << file << ": " << kind;
        auto created = TheSuite().admin->Create(kinds.at(kind), ns, *doc);
        ASSERT_TRUE(created) << file << " " << kind << ": " << created.error().ToString();
      }
    }
    json runner = {
        {"runner_configuration",
         {{"type", "kubernetes-agent"}, {"key", public_key_pem}, {"job", {{"namespace", ns}}}}},
        {"state_storage_configuration", {{"type", "berth"}}}};
    for (const std::vector<std::string>& create : std::vector<std::vector<std::string>>{
             {"create", "runner", "cluster-a", "--set-json", runner.dump()},
             {"create", "env-type", "edge"},
             {"create", "runner-rule", "--set=runner_id=cluster-a", "--set=env_type_id=edge"},
             {"create", "env", "edge", "--project", "web", "--set", "env_type_id=edge"}}) {
      sys::Completed made = Berth(create);
      ASSERT_EQ(made.exit_code, 0) << made.output;
    }
  }

  // The deployment `berth deploy` printed, as `berth deployment ID -o json` shows it.
  static json Shown(const std::string& deploy_output) {
    size_t at = deploy_output.find("deployment d-");
    if (at == std::string::npos) return json();
    std::string id = deploy_output.substr(at + 11, 12);
    sys::Completed shown = Berth({"deployment", id, "-o", "json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.output;
    return json::parse(shown.output, nullptr, false);
  }

  // The steps of the run whose result the deployment keeps.
  static std::vector<std::string> StepNames(const json& deployment) {
    std::vector<std::string> steps;
    if (!deployment.is_object()) return steps;
    for (const json& step : deployment["result"]["run"].value("steps", json::array()))
      steps.push_back(step.value("name", ""));
    return steps;
  }

  static bool Contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  static std::string BerthdPodName() {
    auto pods = TheSuite().admin->List(kube::kPods, kNamespace,
                                       {.label_selector = "app.kubernetes.io/component=berthd"});
    if (!pods) return "";
    for (const json& pod : pods->items) {
      if (!pod["metadata"].contains("deletionTimestamp") &&
          pod["status"].value("phase", "") == "Running")
        return pod["metadata"]["name"];
    }
    return "";
  }
};

// One story, in order: install, deploy, upgrade mid-deployment, uninstall.
TEST_F(HelmInstall, InstallDeployUpgradeAndUninstallOnARealNode) {
  std::vector<std::string> install = {"install", "berth",
                                      (testenv::SourceDir() / "deploy/helm/berth").string()};
  for (const std::string& value : InstallValues()) install.push_back(value);
  sys::Completed installed = Helm(install);
  ASSERT_EQ(installed.exit_code, 0) << installed.output;
  std::string first_pod = BerthdPodName();
  ASSERT_FALSE(first_pod.empty());

  for (const std::vector<std::string>& create : std::vector<std::vector<std::string>>{
           {"create", "runner", "pods", "--set-json",
            R"({"runner_configuration": {"type": "kubernetes",
                                         "job": {"namespace": "berth", "keep_for_approval": "10m"}},
                "state_storage_configuration": {"type": "berth"}})"},
           {"create", "runner-rule", "--set=runner_id=pods"},
           {"create", "project", "web"},
           {"create", "env-type", "development"},
           {"create", "env", "dev", "--project", "web", "--set", "env_type_id=development"},
           {"create", "env", "stg", "--project", "web", "--set", "env_type_id=development"}}) {
    sys::Completed made = Berth(create);
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  fs::path hello = testenv::SourceDir() / "examples/hello";
  sys::Completed deployed = Berth({"deploy", hello.string(), "--project", "web", "--env", "dev",
                                   "--var", "name=helm", "--require-approval", "--auto-approve"});
  ASSERT_EQ(deployed.exit_code, 0) << deployed.output;
  EXPECT_NE(deployed.output.find("hello, helm"), std::string::npos) << deployed.output;
  // The approved apply ran in its plan's kept Pod, on the real kubelet: no second init.
  std::vector<std::string> steps = StepNames(Shown(deployed.output));
  EXPECT_TRUE(Contains(steps, "apply") && !Contains(steps, "init")) << fmt::format("{}", steps);

  // berth-agent from deploy/kubernetes: both replicas poll; a deployment to web/edge runs as a
  // Job the agents created in their namespace.
  auto keys = sys::TempDir::Create("agent-key");
  ASSERT_TRUE(keys);
  auto keygen = sys::RunToCompletion(
      {.argv = {BERTH_AGENT_BIN, "keygen", "--out", (keys->Path() / "agent.key").string()},
       .stdout_path = (keys->Path() / "agent.pub").string()});
  ASSERT_TRUE(keygen && keygen->exit_code == 0) << (keygen ? keygen->output : "");
  ApplyAgentManifests(keys->Path() / "agent.key",
                      sys::ReadFile(keys->Path() / "agent.pub").value());
  auto agent_status = [] {
    sys::Completed shown = Berth({"get", "runner", "cluster-a", "-o", "json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.output;
    json status = json::parse(shown.output, nullptr, false);
    return status.is_object() ? status["status"]["agent"] : json();
  };
  for (int i = 0; i < 1200 && agent_status()["agents"].size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(agent_status()["agents"].size(), 2u) << agent_status().dump(2);
  sys::Completed through_agent =
      Berth({"deploy", hello.string(), "--project", "web", "--env", "edge", "--var", "name=agent",
             "--require-approval", "--auto-approve"});
  ASSERT_EQ(through_agent.exit_code, 0) << through_agent.output;
  EXPECT_NE(through_agent.output.find("hello, agent"), std::string::npos) << through_agent.output;
  EXPECT_TRUE(agent_status()["connected"]) << agent_status().dump(2);

  // Then a changed value while two deployments are under way: one stopped at its plan, one
  // whose run is in its Pod (thousands of resources: seconds of work). berthd rolls; the
  // runner's posts wait for the new berthd, the approval goes to it, and both end well (all of
  // berthd's state was on the claim).
  sys::Completed waiting = Berth({"deploy", hello.string(), "--project", "web", "--env", "dev",
                                  "--var", "name=upgraded", "--require-approval"});
  ASSERT_EQ(waiting.exit_code, 0) << waiting.output;
  size_t hint = waiting.output.find("berth approve d-");
  ASSERT_NE(hint, std::string::npos) << waiting.output;
  std::string approval_id = waiting.output.substr(hint + 14, 12);
  size_t hash_at = waiting.output.find("--plan-hash ", hint) + 12;
  std::string hash = waiting.output.substr(hash_at, waiting.output.find('\n', hash_at) - hash_at);

  auto many = sys::TempDir::Create("many-resources");
  ASSERT_TRUE(many);
  ASSERT_TRUE(sys::WriteFileAtomic(
      many->Path() / "main.tf",
      "resource \"terraform_data\" \"n\" {\n  count = 8000\n  input = count.index\n}\n",
      fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read));
  sys::Completed queued =
      Berth({"deploy", many->Path().string(), "--project", "web", "--env", "stg", "--no-wait"});
  ASSERT_EQ(queued.exit_code, 0) << queued.output;
  std::string in_flight = queued.output.substr(queued.output.find("d-"), 14);
  in_flight = in_flight.substr(0, in_flight.find_first_of(" \n"));
  // Its run (plan and apply in one, no approval asked) is under way in its Pod (the other
  // deployment's plan Pod is kept, waiting for its approval).
  bool running = false;
  for (int i = 0; i < 1800 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto pods = TheSuite().admin->List(kube::kPods, kNamespace,
                                       {.label_selector = "berth.dev/run=" + in_flight});
    running =
        pods && !pods->items.empty() && pods->items[0]["status"].value("phase", "") == "Running";
  }
  ASSERT_TRUE(running) << "the run never started: " << queued.output;

  std::vector<std::string> upgrade = {"upgrade", "berth",
                                      (testenv::SourceDir() / "deploy/helm/berth").string(),
                                      "--set", "logFormat=text"};
  for (const std::string& value : InstallValues()) upgrade.push_back(value);
  sys::Completed upgraded = Helm(upgrade);
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.output;
  std::string second_pod = BerthdPodName();
  EXPECT_FALSE(second_pod.empty());
  EXPECT_NE(second_pod, first_pod) << "the changed value did not roll berthd";

  ASSERT_EQ(Berth({"logs", "-f", in_flight}).exit_code, 0);
  sys::Completed flown = Berth({"deployment", in_flight, "-o", "json"});
  ASSERT_EQ(flown.exit_code, 0) << flown.output;
  json survived = json::parse(flown.output);
  EXPECT_EQ(survived["state"], "succeeded") << flown.output;
  auto rolled = TheSuite().admin->Get(kube::kPods, kNamespace, second_pod);
  ASSERT_TRUE(rolled);
  EXPECT_GT(survived["result"]["run"].value("finishedAt", ""),
            (*rolled)["status"].value("startTime", "~"))
      << "the run ended before berthd rolled: nothing was in flight";

  sys::Completed approved = Berth({"approve", approval_id, "--plan-hash", hash});
  ASSERT_EQ(approved.exit_code, 0) << approved.output;
  ASSERT_EQ(Berth({"logs", "-f", approval_id}).exit_code, 0);
  sys::Completed shown = Berth({"deployment", approval_id, "-o", "json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_EQ(json::parse(shown.output)["state"], "succeeded") << shown.output;
  // The new berthd removed the plan's kept Pod, which it did not track: the apply had a Pod
  // of its own, with its own init.
  EXPECT_TRUE(Contains(StepNames(json::parse(shown.output)), "init")) << shown.output;

  sys::Completed uninstalled = Helm({"uninstall", "berth", "--namespace", kNamespace, "--wait"});
  ASSERT_EQ(uninstalled.exit_code, 0) << uninstalled.output;
  for (const kube::ResourceKind& kind :
       {kube::kServiceAccounts, kube::kSecrets, kube::kRoles, kube::kRoleBindings,
        kube::ResourceKind{"apps/v1", "Deployment", "deployments"},
        kube::ResourceKind{"v1", "Service", "services"}}) {
    auto left = TheSuite().admin->List(kind, kNamespace,
                                       {.label_selector = "app.kubernetes.io/instance=berth"});
    ASSERT_TRUE(left);
    EXPECT_TRUE(left->items.empty()) << kind.kind << " left behind";
  }
  EXPECT_TRUE(TheSuite().admin->Get({"v1", "PersistentVolumeClaim", "persistentvolumeclaims"},
                                    kNamespace, "berth-data"))
      << "the data's claim is kept";
}

}  // namespace
}  // namespace berth
