// The runner Pod from its three sources: launcher settings (KUBERNETES_*), the runner's
// configuration in both shapes, and the run's override labels.
#include "launch/kubernetes/pod_builder.h"

#include <gtest/gtest.h>

namespace berth::launch {
namespace {

using nlohmann::json;

KubernetesSettings Settings(const kube::Environment& extra = {}) {
  kube::Environment env = {{"KUBERNETES_IMAGE", "berth/runner:1"},
                           {"KUBERNETES_NAMESPACE", "runners"}};
  for (auto& [k, v] : extra) env[k] = v;
  auto settings = KubernetesSettings::FromEnvironment(env);
  EXPECT_TRUE(settings) << settings.error().ToString();
  return *settings;
}

RunnerPodConfig Config(const json& document) {
  auto config = RunnerPodConfig::Parse(document);
  EXPECT_TRUE(config) << config.error().ToString();
  return *config;
}

RunnerPodRequest Request(std::map<std::string, std::string> labels = {}) {
  return {
      .run_id = "r1", .revision = "7", .invocation = {.op = "plan"}, .labels = std::move(labels)};
}

const json& MainContainer(const RunnerManifests& m) { return m.workload["spec"]["containers"][0]; }

TEST(KubernetesSettings, NamesEveryBadVariable) {
  auto settings =
      KubernetesSettings::FromEnvironment({{"KUBERNETES_NAMESPACE", "Not_A_Namespace"},
                                           {"KUBERNETES_MEMORY", "lots"},
                                           {"KUBERNETES_STARTUP_GRACE_PERIOD", "soon"},
                                           {"KUBERNETES_IMAGE_PULL_POLICY", "Sometimes"},
                                           {"KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE", "yes"}});
  ASSERT_FALSE(settings);
  std::vector<std::string> names;
  for (const auto& field : settings.error().fields) names.push_back(field.path);
  EXPECT_EQ(names, (std::vector<std::string>{"KUBERNETES_IMAGE", "KUBERNETES_NAMESPACE",
                                             "KUBERNETES_MEMORY", "KUBERNETES_STARTUP_GRACE_PERIOD",
                                             "KUBERNETES_IMAGE_PULL_POLICY",
                                             "KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE"}));
  EXPECT_NE(settings.error().message.find("KUBERNETES_IMAGE is required"), std::string::npos);
}

TEST(KubernetesSettings, ReadsTheDefaults) {
  auto s = Settings({{"KUBERNETES_CPU", "500m"},
                     {"KUBERNETES_STARTUP_GRACE_PERIOD", "90s"},
                     {"KUBERNETES_IMAGE_PULL_SECRETS", "a,b"},
                     {"HTTPS_PROXY", "http://proxy:3128"}});
  EXPECT_EQ(s.cpu->ToString(), "500m");
  EXPECT_EQ(s.startup_grace_period, std::chrono::seconds(90));
  EXPECT_EQ(s.image_pull_secrets, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.proxy_env.size(), 1u);
}

TEST(RunnerPodConfig, ReadsBothShapes) {
  auto controller = Config({{"spec",
                             {{"runner",
                               {{"binary", "tofu"},
                                {"serviceAccountName", "tf-runner"},
                                {"alwaysCleanup", false},
                                {"terminationGracePeriodSeconds", 45}}}}}});
  EXPECT_EQ(controller.binary, "tofu");
  EXPECT_EQ(controller.service_account, "tf-runner");
  EXPECT_FALSE(controller.always_cleanup);
  EXPECT_EQ(controller.termination_grace_period_seconds, 45);

  auto job = Config({{"job",
                      {{"namespace", "team-a"},
                       {"service_account", "deployer"},
                       {"pod_template", R"({"spec":{"nodeSelector":{"pool":"infra"}}})"}}}});
  EXPECT_EQ(job.ns, "team-a");
  EXPECT_EQ(job.service_account, "deployer");
  EXPECT_EQ(job.template_spec["nodeSelector"]["pool"], "infra");
}

TEST(RunnerPodConfig, ARunnersJobCarriesTheControllersRunnerFields) {
  auto job = Config({{"job",
                      {{"namespace", "team-a"},
                       {"binary", "terraform"},
                       {"always_cleanup", false},
                       {"termination_grace_period_seconds", 30}}}});
  EXPECT_EQ(job.binary, "terraform");
  EXPECT_FALSE(job.always_cleanup);
  EXPECT_EQ(job.termination_grace_period_seconds, 30);
  auto m = BuildRunnerManifests(Settings(), job, Request());
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->workload["spec"]["terminationGracePeriodSeconds"], 30);
  const json& args = MainContainer(*m)["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--binary=terraform"), args.end()) << args.dump();

  EXPECT_EQ(job.keep_for_approval.count(), 0);  // plans' Pods are not kept unless asked
  auto kept = Config({{"job", {{"namespace", "team-a"}, {"keep_for_approval", "15m"}}}});
  EXPECT_EQ(kept.keep_for_approval, std::chrono::minutes(15));

  auto bad = RunnerPodConfig::Parse({{"job", {{"namespace", "a"}, {"binary", "bash"}}}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().fields.front().path, "$.job.binary");
}

TEST(RunnerPodConfig, TheSeedsMainContainerSetsTheImageItsPullPolicyAndPullSecrets) {
  // The orchestrator seed's "custom runner image" example, as YAML gives it.
  auto job = Config({{"job",
                      {{"namespace", "team-a"},
                       {"pod_template",
                        {{"spec",
                          {{"containers",
                            {{{"name", "main"},
                              {"image", "my-own-registry.com/runner:v1.2.3"},
                              {"imagePullPolicy", "IfNotPresent"}}}},
                           {"imagePullSecrets", {{{"name", "regcred"}}}}}}}}}}});
  auto m =
      BuildRunnerManifests(Settings({{"KUBERNETES_IMAGE_PULL_SECRETS", "shared"}}), job, Request());
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(MainContainer(*m)["image"], "my-own-registry.com/runner:v1.2.3");
  EXPECT_EQ(MainContainer(*m)["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(m->workload["spec"]["initContainers"][0]["image"], "berth/runner:1")
      << "the runner is still copied from the launcher's image";
  EXPECT_EQ(m->workload["spec"]["imagePullSecrets"],
            (json{{{"name", "shared"}}, {{"name", "regcred"}}}));
  EXPECT_FALSE(m->workload["spec"]["containers"].size() != 1);

  for (const auto& [bad, path] : std::vector<std::pair<json, std::string>>{
           {{{"containers", {{{"name", "sidecar"}}}}},
            "$.job.pod_template.spec.containers[0].name"},
           {{{"containers", {{{"name", "main"}}, {{"name", "main"}}}}},
            "$.job.pod_template.spec.containers"},
           {{{"containers", {{{"name", "main"}, {"command", {"sh"}}}}}},
            "$.job.pod_template.spec.containers[0].command"}}) {
    auto refused =
        RunnerPodConfig::Parse({{"job", {{"namespace", "a"}, {"pod_template", {{"spec", bad}}}}}});
    ASSERT_FALSE(refused) << bad.dump();
    EXPECT_EQ(refused.error().fields.front().path, path) << refused.error().ToString();
  }
}

// A TF_* variable the runner keeps for itself is refused when saved, naming it; others (the
// seed's TF_LOG, TF_VAR_*, TF_TOKEN_*) are the user's.
TEST(RunnerPodConfig, RefusesTheTfVariablesBerthKeepsForItself) {
  const json env = {{{"name", "TF_LOG"}, {"value", "INFO"}},
                    {{"name", "TF_CLI_ARGS_apply"}, {"value", "-lock=false"}},
                    {{"name", "TF_TOKEN_registry_example_com"}, {"value", "t"}},
                    {{"name", "TF_HTTP_ADDRESS"}, {"value", "https://elsewhere"}}};
  auto job = RunnerPodConfig::Parse(
      {{"job", {{"namespace", "a"}, {"pod_template", {{"spec", {{"env", env}}}}}}}});
  ASSERT_FALSE(job);
  ASSERT_EQ(job.error().fields.size(), 2u) << job.error().ToString();
  EXPECT_EQ(job.error().fields[0].path, "$.job.pod_template.spec.env[1].name");
  EXPECT_NE(job.error().fields[0].rule.find("TF_CLI_ARGS_apply is berth's own"), std::string::npos)
      << job.error().fields[0].rule;
  EXPECT_EQ(job.error().fields[1].path, "$.job.pod_template.spec.env[3].name");
  auto controller =
      RunnerPodConfig::Parse({{"runner", {{"podTemplate", {{"spec", {{"env", env}}}}}}}});
  ASSERT_FALSE(controller);
  EXPECT_EQ(controller.error().fields.front().path, "$.runner.podTemplate.spec.env[1].name");
  EXPECT_TRUE(RunnerPodConfig::Parse(
      {{"job", {{"namespace", "a"}, {"pod_template", {{"spec", {{"env", {env[0], env[2]}}}}}}}}}));
}

TEST(RunnerPodConfig, RefusesUnknownFieldsWithTheirPath) {
  auto config = RunnerPodConfig::Parse(
      {{"runner", {{"podTemplate", {{"spec", {{"hostNetwork", true}}}}}, {"binary", "bash"}}}});
  ASSERT_FALSE(config);
  std::vector<std::string> paths;
  for (const auto& f : config.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths,
            (std::vector<std::string>{"$.runner.binary", "$.runner.podTemplate.spec.hostNetwork"}));
}

TEST(RunnerPodConfig, TemplateMetadataStaysOutOfBerthsOwnKeys) {
  auto config =
      RunnerPodConfig::Parse({{"runner",
                               {{"podTemplate",
                                 {{"metadata",
                                   {{"labels", {{"berth.dev/run", "other"}, {"team", "has space"}}},
                                    {"annotations", {{"berth.dev/spec-hash", "x"}}}}}}}}}});
  ASSERT_FALSE(config);
  std::vector<std::string> paths;
  for (const auto& f : config.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"$.runner.podTemplate.metadata.labels",
                                             "$.runner.podTemplate.metadata.annotations"}));
  EXPECT_NE(config.error().ToString().find("berth.dev/ is reserved"), std::string::npos);
  EXPECT_FALSE(RunnerPodConfig::Parse(
      {{"runner", {{"podTemplate", {{"metadata", {{"labels", {{"team", "has space"}}}}}}}}}}));
}

TEST(PodBuilder, TemplateLabelsRenameTheAppLabelsButNeverTheRunsOwn) {
  auto m = BuildRunnerManifests(
      Settings(),
      Config({{"runner",
               {{"podTemplate",
                 {{"metadata", {{"labels", {{"app.kubernetes.io/name", "infra-runner"}}}}}}}}}}),
      Request());
  ASSERT_TRUE(m) << m.error().ToString();
  const json& labels = m->workload["metadata"]["labels"];
  EXPECT_EQ(labels["app.kubernetes.io/name"], "infra-runner");
  EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "berth");
  EXPECT_EQ(labels["berth.dev/run"], "r1");
}

TEST(PodBuilder, HardensEveryContainerAndMountsTheWorkFolders) {
  auto m = BuildRunnerManifests(Settings(), Config(json::object()), Request());
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "berth-run-r1");
  EXPECT_EQ(m->ns, "runners");
  for (const json& c : {m->workload["spec"]["initContainers"][0], MainContainer(*m)}) {
    EXPECT_EQ(c["securityContext"]["runAsUser"], 65532);
    EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
    EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    EXPECT_FALSE(c.contains("resources"));        // none set anywhere: none given
    EXPECT_FALSE(c.contains("imagePullPolicy"));  // the kubelet's default
  }
  const json& init = m->workload["spec"]["initContainers"][0];
  EXPECT_EQ(init["command"], json({"/runner", "copy", "/berth/bin/runner"}));
  EXPECT_EQ(MainContainer(*m)["command"][0], "/berth/bin/runner");
  std::vector<std::string> paths;
  for (const json& mount : MainContainer(*m)["volumeMounts"]) paths.push_back(mount["mountPath"]);
  EXPECT_EQ(paths,
            (std::vector<std::string>{"/home/runner", "/tmp", "/berth/bin", "/berth/token"}));
  const json& labels = m->workload["metadata"]["labels"];
  EXPECT_EQ(labels["app.kubernetes.io/name"], "tf-runner");
  EXPECT_EQ(labels["app.kubernetes.io/instance"], "tf-runner-7");
  EXPECT_EQ(labels["berth.dev/terraform"], "runners");
  EXPECT_EQ(m->result_max_bytes, 4096u);
  const json& args = MainContainer(*m)["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--event-object=Pod/runners/berth-run-r1"),
            args.end())
      << args.dump();
}

TEST(PodBuilder, ATemplateSecurityContextReplacesTheDefaultWhole) {
  auto m = BuildRunnerManifests(
      Settings(),
      Config({{"runner",
               {{"podTemplate", {{"spec", {{"securityContext", {{"runAsUser", 1000}}}}}}}}}}),
      Request());
  ASSERT_TRUE(m);
  EXPECT_EQ(MainContainer(*m)["securityContext"], json({{"runAsUser", 1000}}));
}

TEST(PodBuilder, TheTokenIsInASecretNeverInTheSpec) {
  auto m = BuildRunnerManifests(Settings(), Config(json::object()), Request());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->workload["spec"]["volumes"][3]["secret"]["secretName"], "berth-run-r1-token");
  for (const json& e : MainContainer(*m)["env"]) {
    EXPECT_FALSE(e.contains("valueFrom") && e["valueFrom"].contains("secretKeyRef"));
  }
}

TEST(PodBuilder, ResourcesComeFromSettingsThenTemplateThenLabels) {
  auto m = BuildRunnerManifests(
      Settings({{"KUBERNETES_CPU", "500m"}, {"KUBERNETES_MEMORY", "512Mi"}}),
      Config({{"runner",
               {{"podTemplate", {{"spec", {{"resources", {{"limits", {{"memory", "2Gi"}}}}}}}}}}}}),
      Request({{"berth.dev/runner-spec.kubernetes_limit_cpu", "2"}, {"team", "platform"}}));
  ASSERT_TRUE(m) << m.error().ToString();
  // Memory is the template's alone (it names it); cpu is the setting's, its limit the label's.
  json expected = {{"requests", {{"cpu", "500m"}}}, {"limits", {{"cpu", "2"}, {"memory", "2Gi"}}}};
  EXPECT_EQ(MainContainer(*m)["resources"], expected);
  EXPECT_EQ(m->workload["spec"]["initContainers"][0]["resources"], expected);
}

TEST(PodBuilder, ARequestAboveItsLimitIsRefusedBeforeAnyPod) {
  auto m =
      BuildRunnerManifests(Settings({{"KUBERNETES_MEMORY", "512Mi"}}), Config(json::object()),
                           Request({{"berth.dev/runner-spec.kubernetes_request_memory", "1Gi"}}));
  ASSERT_FALSE(m);
  ASSERT_EQ(m.error().fields.size(), 1u);
  EXPECT_EQ(m.error().fields[0].path, "berth.dev/runner-spec.kubernetes_request_memory");
  EXPECT_NE(m.error().fields[0].rule.find("above the limit 512Mi (from KUBERNETES_MEMORY)"),
            std::string::npos);
}

TEST(PodBuilder, AnInvalidQuantityLabelNamesTheLabel) {
  auto m =
      BuildRunnerManifests(Settings(), Config(json::object()),
                           Request({{"berth.dev/runner-spec.kubernetes_limit_cpu", "2 cores"}}));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().fields[0].path, "berth.dev/runner-spec.kubernetes_limit_cpu");
}

TEST(PodBuilder, TheImageOverrideNeedsTheOperatorsConsent) {
  auto labels = std::map<std::string, std::string>{
      {"berth.dev/runner-spec.kubernetes_image", "evil/image:1"}};
  auto ignored = BuildRunnerManifests(Settings(), Config(json::object()), Request(labels));
  ASSERT_TRUE(ignored);
  EXPECT_EQ(MainContainer(*ignored)["image"], "berth/runner:1");
  ASSERT_EQ(ignored->warnings.size(), 1u);
  EXPECT_EQ(ignored->warnings[0].reason, "ImageOverrideIgnored");
  EXPECT_NE(ignored->warnings[0].message.find("KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE"),
            std::string::npos);

  auto allowed = BuildRunnerManifests(Settings({{"KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE", "true"}}),
                                      Config(json::object()), Request(labels));
  ASSERT_TRUE(allowed);
  EXPECT_EQ(MainContainer(*allowed)["image"], "evil/image:1");
  EXPECT_TRUE(allowed->warnings.empty());
  // The init container always copies the runner from the operator's image.
  EXPECT_EQ(allowed->workload["spec"]["initContainers"][0]["image"], "berth/runner:1");
}

TEST(PodBuilder, PassesTemplateSchedulingAndVolumesThrough) {
  json spec = {{"nodeSelector", {{"workload", "infra"}}},
               {"tolerations", {{{"key", "infra"}, {"operator", "Exists"}}}},
               {"priorityClassName", "infra-runs"},
               {"env", {{{"name", "TF_LOG"}, {"value", "INFO"}}}},
               {"envFrom", {{{"secretRef", {{"name", "aws-creds"}}}}}},
               {"volumes", {{{"name", "ca"}, {"configMap", {{"name", "corp-ca"}}}}}},
               {"volumeMounts", {{{"name", "ca"}, {"mountPath", "/etc/ca"}}}},
               {"initContainers", {{{"name", "fetch"}, {"image", "oras"}}}}};
  auto m = BuildRunnerManifests(
      Settings({{"KUBERNETES_IMAGE_PULL_POLICY", "Always"}, {"HTTP_PROXY", "http://p:1"}}),
      Config(
          {{"runner",
            {{"podTemplate", {{"metadata", {{"labels", {{"cost", "infra"}}}}}, {"spec", spec}}}}}}),
      Request());
  ASSERT_TRUE(m) << m.error().ToString();
  const json& pod = m->workload["spec"];
  EXPECT_EQ(pod["nodeSelector"]["workload"], "infra");
  EXPECT_EQ(pod["priorityClassName"], "infra-runs");
  EXPECT_EQ(pod["volumes"].back()["name"], "ca");
  EXPECT_EQ(pod["initContainers"][1]["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(MainContainer(*m)["imagePullPolicy"], "Always");
  EXPECT_EQ(MainContainer(*m)["envFrom"][0]["secretRef"]["name"], "aws-creds");
  std::string env = MainContainer(*m)["env"].dump();
  EXPECT_NE(env.find("TF_LOG"), std::string::npos);
  EXPECT_NE(env.find("HTTP_PROXY"), std::string::npos);
  EXPECT_EQ(m->workload["metadata"]["labels"]["cost"], "infra");
  // Three containers share the Pod's 12 KiB of termination messages.
  EXPECT_EQ(m->result_max_bytes, 4096u);
  EXPECT_NE(MainContainer(*m)["args"].dump().find("--result-max-bytes=4096"), std::string::npos);
}

TEST(PodBuilder, ManyContainersShrinkTheResultBudget) {
  json inits = json::array();
  for (int i = 0; i < 4; ++i) inits.push_back({{"name", "i" + std::to_string(i)}, {"image", "x"}});
  auto m = BuildRunnerManifests(
      Settings(), Config({{"runner", {{"podTemplate", {{"spec", {{"initContainers", inits}}}}}}}}),
      Request());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->result_max_bytes, 12u * 1024 / 6);
}

TEST(PodBuilder, AJobRunsOnceAndFailsAtTheFirstFailure) {
  auto request = Request();
  request.kind = WorkloadKind::kJob;
  auto m = BuildRunnerManifests(Settings(), Config(json::object()), request);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->workload["kind"], "Job");
  EXPECT_EQ(m->workload["spec"]["backoffLimit"], 0);
  EXPECT_EQ(m->workload["spec"]["template"]["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(m->workload["spec"]["podFailurePolicy"]["rules"][1]["onExitCodes"]["containerName"],
            "runner");
}

}  // namespace
}  // namespace berth::launch
