// A runner's saved configuration read once into what its launcher uses: every field of the
// types berthd launches reaches its struct, and a document its schema refuses is refused with
// the field's path rather than read in part.
#include "launch/runner_settings.h"

#include <gtest/gtest.h>

#include "core/ed25519_key.h"

namespace berth::launch {
namespace {

using nlohmann::json;

TEST(RunnerSettings, ALocalRunnersEveryFieldReachesItsSettings) {
  auto parsed = ParseRunnerSettings(
      RunnerType::kLocal,
      {{"type", "local"},
       {"max_parallel", 2},
       {"work_dir", "/srv/runs"},
       {"limits", {{"memory", "512Mi"}, {"cpu_seconds", 600}, {"disk", "1Gi"}, {"processes", 64}}},
       {"network", "full"},
       {"network_allow", {"metadata", "loopback"}}});
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  const auto& local = std::get<LocalRunnerSettings>(*parsed);
  EXPECT_EQ(local.max_parallel, 2);
  EXPECT_EQ(local.work_dir, "/srv/runs");
  EXPECT_EQ(local.limits.memory_bytes, int64_t{512} << 20);
  EXPECT_EQ(local.limits.cpu_seconds, 600);
  EXPECT_EQ(local.limits.disk_bytes, int64_t{1} << 30);
  EXPECT_EQ(local.limits.processes, 64);
  EXPECT_FALSE(local.cuts_network);
  EXPECT_TRUE(local.allowance.metadata);
  EXPECT_TRUE(local.allowance.loopback);

  auto cut =
      ParseRunnerSettings(RunnerType::kLocal, {{"type", "local"}, {"network", "berthd_only"}});
  ASSERT_TRUE(cut) << cut.error().ToString();
  EXPECT_TRUE(std::get<LocalRunnerSettings>(*cut).cuts_network);
  EXPECT_FALSE(std::get<LocalRunnerSettings>(*cut).max_parallel) << "the launcher's";
}

TEST(RunnerSettings, AKubernetesRunnersJobAndClusterReachItsSettings) {
  auto parsed = ParseRunnerSettings(
      RunnerType::kKubernetes,
      {{"type", "kubernetes"},
       {"job",
        {{"namespace", "runs"}, {"service_account", "deployer"}, {"keep_for_approval", "1h"}}},
       {"cluster", {{"kubeconfig_context", "prod"}}}});
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  const KubernetesRunnerSettings* kubernetes = KubernetesSettingsOf(*parsed);
  ASSERT_NE(kubernetes, nullptr);
  EXPECT_EQ(kubernetes->pod.ns, "runs");
  EXPECT_EQ(kubernetes->pod.service_account, "deployer");
  EXPECT_EQ(kubernetes->pod.keep_for_approval, std::chrono::hours(1));
  ASSERT_TRUE(kubernetes->cluster);
  EXPECT_EQ(kubernetes->cluster->kubeconfig_context, "prod");

  auto home = ParseRunnerSettings(RunnerType::kKubernetes,
                                  {{"type", "kubernetes"}, {"job", {{"namespace", "runs"}}}});
  ASSERT_TRUE(home) << home.error().ToString();
  EXPECT_FALSE(KubernetesSettingsOf(*home)->cluster) << "berthd's own cluster";
}

TEST(RunnerSettings, AnAgentRunnerKeepsItsJobItsExpiryAndWhatItsWireCarries) {
  const json saved = {{"type", "kubernetes-agent"},
                      {"key", Ed25519PublicKeyPem(std::string(32, 'k'))},
                      {"job", {{"namespace", "agent-runs"}}}};
  auto parsed = ParseRunnerSettings(RunnerType::kKubernetesAgent, saved);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  const auto& agent = std::get<AgentRunnerSettings>(*parsed);
  EXPECT_EQ(agent.job.pod.ns, "agent-runs");
  EXPECT_EQ(KubernetesSettingsOf(*parsed), &agent.job);
  EXPECT_EQ(agent.command_expiry, std::chrono::hours(1)) << "the default";
  EXPECT_EQ(agent.saved["job"]["namespace"], "agent-runs");
}

TEST(RunnerSettings, ADocumentItsSchemaRefusesIsRefusedNamingTheFieldNotReadInPart) {
  auto check = [](RunnerType type, const json& saved, const std::string& path) {
    auto parsed = ParseRunnerSettings(type, saved);
    ASSERT_FALSE(parsed) << saved.dump();
    EXPECT_NE(parsed.error().message.find(path), std::string::npos) << parsed.error().message;
  };
  check(RunnerType::kLocal, {{"type", "local"}, {"limits", {{"memory", "a lot"}}}},
        "$.runner_configuration.limits.memory");
  check(RunnerType::kLocal, {{"type", "local"}, {"work_dir", "relative/runs"}},
        "$.runner_configuration.work_dir");
  check(RunnerType::kLocal,
        {{"type", "local"}, {"network", "berthd_only"}, {"network_allow", {"metadata"}}},
        "$.runner_configuration");
  check(RunnerType::kLocal, {{"type", "local"}, {"privileged", true}},
        "$.runner_configuration.privileged");
  check(RunnerType::kKubernetes, {{"type", "kubernetes"}}, "$.runner_configuration.job");
  check(RunnerType::kKubernetes,
        {{"type", "kubernetes"},
         {"job", {{"namespace", "runs"}, {"pod_template", {{"spec", {{"hostPID", "yes"}}}}}}}},
        "$.runner_configuration.job.pod_template.spec.hostPID");
  check(RunnerType::kKubernetes,
        {{"type", "kubernetes"}, {"job", {{"namespace", "runs"}}}, {"cluster", json::object()}},
        "$.runner_configuration.cluster");
  check(RunnerType::kKubernetes, {{"type", "local"}}, "$.runner_configuration.type");
  check(RunnerType::kKubernetes, json::parse(R"({"type": "kubernetes", "job": {"namespace": "runs",
          "pod_template": {"spec": {"env": [{"name": "TF_HTTP_PASSWORD", "value": "x"}]}}}})"),
        "$.runner_configuration.job.pod_template.spec.env[0].name");
}

TEST(RunnerSettings, ATypeNoLauncherHereRunsIsRefused) {
  for (RunnerType type : AllRunnerTypes()) {
    if (type == RunnerType::kLocal || type == RunnerType::kKubernetes ||
        type == RunnerType::kKubernetesAgent)
      continue;
    auto parsed = ParseRunnerSettings(type, {{"type", std::string(RunnerTypeName(type))}});
    ASSERT_FALSE(parsed) << RunnerTypeName(type);
    EXPECT_NE(parsed.error().message.find("has no launcher here"), std::string::npos)
        << parsed.error().message;
  }
}

}  // namespace
}  // namespace berth::launch
